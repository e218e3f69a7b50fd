// src/node.ts
import { readFileSync } from "node:fs";
import { createConnectTransport } from "@connectrpc/connect-node";

// src/referee.ts
import { create } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient } from "@connectrpc/connect";

// src/gen/rummy/v1/game_pb.ts
import { enumDesc, fileDesc, messageDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_struct } from "@bufbuild/protobuf/wkt";
var file_rummy_v1_game = /* @__PURE__ */ fileDesc("ChNydW1teS92MS9nYW1lLnByb3RvEghydW1teS52MSJZCgtPcHRpb25WYWx1ZRIUCgpib29sX3ZhbHVlGAEgASgISAASEwoJaW50X3ZhbHVlGAIgASgDSAASFgoMc3RyaW5nX3ZhbHVlGAMgASgJSABCBwoFdmFsdWUiFgoFQ2FyZHMSDQoFY2FyZHMYASADKAkiJwoFTWVsZHMSHgoFbWVsZHMYASADKAsyDy5ydW1teS52MS5DYXJkcyKIBgoETW92ZRIuCgpkcmF3X3N0b2NrGAEgASgLMhgucnVtbXkudjEuTW92ZS5EcmF3U3RvY2tIABIyCgxkcmF3X2Rpc2NhcmQYAiABKAsyGi5ydW1teS52MS5Nb3ZlLkRyYXdEaXNjYXJkSAASLAoJcGFzc190dXJuGAMgASgLMhcucnVtbXkudjEuTW92ZS5QYXNzVHVybkgAEikKB2Rpc2NhcmQYBCABKAsyFi5ydW1teS52MS5Nb3ZlLkRpc2NhcmRIABIlCgVrbm9jaxgFIAEoCzIULnJ1bW15LnYxLk1vdmUuS25vY2tIABIoCgdiaWdfZ2luGAYgASgLMhUucnVtbXkudjEuTW92ZS5CaWdHaW5IABIjCgRtZWxkGAcgASgLMhMucnVtbXkudjEuTW92ZS5NZWxkSAASKAoHbGF5X29mZhgIIAEoCzIVLnJ1bW15LnYxLk1vdmUuTGF5T2ZmSAASKQoHZGVjbGFyZRgJIAEoCzIWLnJ1bW15LnYxLk1vdmUuRGVjbGFyZUgAEiMKBGRvbmUYCiABKAsyEy5ydW1teS52MS5Nb3ZlLkRvbmVIABoLCglEcmF3U3RvY2saDQoLRHJhd0Rpc2NhcmQaCgoIUGFzc1R1cm4aFwoHRGlzY2FyZBIMCgRjYXJkGAEgASgJGjgKBUtub2NrEg8KB2Rpc2NhcmQYASABKAkSHgoFbWVsZHMYAiABKAsyDy5ydW1teS52MS5NZWxkcxooCgZCaWdHaW4SHgoFbWVsZHMYASABKAsyDy5ydW1teS52MS5NZWxkcxoVCgRNZWxkEg0KBWNhcmRzGAEgAygJGicKBkxheU9mZhIMCgRjYXJkGAEgASgJEg8KB21lbGRfaWQYAiABKAUaXgoHRGVjbGFyZRIeCgVtZWxkcxgBIAMoCzIPLnJ1bW15LnYxLkNhcmRzEiUKB2xheW9mZnMYAiADKAsyFC5ydW1teS52MS5MYXlPZmZDYXJkEgwKBGJlc3QYAyABKAgaBgoERG9uZUIGCgRtb3ZlIisKCkxheU9mZkNhcmQSDAoEY2FyZBgBIAEoCRIPCgdtZWxkX2lkGAIgASgFIiUKB0xhaWRPZmYSDAoEY2FyZBgBIAEoCRIMCgRzZWF0GAIgASgFInsKCVRhYmxlTWVsZBIKCgJpZBgBIAEoBRINCgVvd25lchgCIAEoBRIgCgRraW5kGAMgASgOMhIucnVtbXkudjEuTWVsZEtpbmQSDQoFY2FyZHMYBCADKAkSIgoHbGF5b2ZmcxgFIAMoCzIRLnJ1bW15LnYxLkxhaWRPZmYi1wEKCFNlYXRWaWV3EgwKBHNlYXQYASABKAUSFAoMZGlzcGxheV9uYW1lGAIgASgJEiAKBGtpbmQYAyABKA4yEi5ydW1teS52MS5TZWF0S2luZBIMCgRvcGVuGAQgASgIEhEKCWhhbmRfc2l6ZRgFIAEoBRITCgtrbm93bl9jYXJkcxgGIAMoCRINCgVzY29yZRgHIAEoBRINCgVib3hlcxgIIAEoBRIYChBob2xseXdvb2Rfc2NvcmVzGAkgAygFEhcKD2hvbGx5d29vZF9ib3hlcxgKIAMoBSJGCglLbm9ja0luZm8SDwoHa25vY2tlchgBIAEoBRIQCghkZWFkd29vZBgCIAEoBRIWCg5kZWFkd29vZF9jYXJkcxgDIAMoCSKGAwoKSGFuZFJlc3VsdBITCgtoYW5kX251bWJlchgBIAEoBRIOCgZyZWFzb24YAiABKAkSEwoGd2lubmVyGAMgASgFSACIAQESDgoGcG9pbnRzGAQgASgFEh4KBWhhbmRzGAUgAygLMg8ucnVtbXkudjEuQ2FyZHMSEwoLaGFuZF92YWx1ZXMYBiADKAUSDgoGc2NvcmVzGAcgAygFEhQKB2tub2NrZXIYCCABKAVIAYgBARIdChBrbm9ja2VyX2RlYWR3b29kGAkgASgFSAKIAQESHgoRZGVmZW5kZXJfZGVhZHdvb2QYCiABKAVIA4gBARIYCgtnb2luZ19ydW1teRgLIAEoCEgEiAEBEigKB2RldGFpbHMYDCABKAsyFy5nb29nbGUucHJvdG9idWYuU3RydWN0QgkKB193aW5uZXJCCgoIX2tub2NrZXJCEwoRX2tub2NrZXJfZGVhZHdvb2RCFAoSX2RlZmVuZGVyX2RlYWR3b29kQg4KDF9nb2luZ19ydW1teSLPAQoLTWF0Y2hSZXN1bHQSDgoGdG90YWxzGAEgAygFEg8KB3dpbm5lcnMYAiADKAUSKAoHZGV0YWlscxgDIAEoCzIXLmdvb2dsZS5wcm90b2J1Zi5TdHJ1Y3QSIQoFZW5kZWQYBCABKA4yEi5ydW1teS52MS5NYXRjaEVuZBIkCglzZWF0X2VuZHMYBSADKA4yES5ydW1teS52MS5TZWF0RW5kEhoKDXJlc2lnbmVkX3NlYXQYBiABKAVIAIgBAUIQCg5fcmVzaWduZWRfc2VhdCL/BQoIR2FtZVZpZXcSDwoHZ2FtZV9pZBgBIAEoCRIPCgd2ZXJzaW9uGAIgASgEEiMKC3ZpZXdlcl9yb2xlGAMgASgOMg4ucnVtbXkudjEuUm9sZRIYCgt2aWV3ZXJfc2VhdBgEIAEoBUgAiAEBEiAKBGdhbWUYBSABKA4yEi5ydW1teS52MS5HYW1lS2luZBIeCgVwaGFzZRgGIAEoDjIPLnJ1bW15LnYxLlBoYXNlEhMKBnRvX2FjdBgHIAEoBUgBiAEBEg4KBmRlYWxlchgIIAEoBRITCgtoYW5kX251bWJlchgJIAEoBRIhCgVzZWF0cxgKIAMoCzISLnJ1bW15LnYxLlNlYXRWaWV3EgwKBGhhbmQYCyADKAkSIgoFbWVsZHMYDCADKAsyEy5ydW1teS52MS5UYWJsZU1lbGQSFAoMZGlzY2FyZF9waWxlGA0gAygJEhIKCnN0b2NrX3NpemUYDiABKAUSFwoKdGFrZW5fY2FyZBgPIAEoCUgCiAEBEg0KBXR1cm5zGBAgASgFEhQKDGhhbmRzX3BsYXllZBgRIAEoBRITCgZ1cGNhcmQYEiABKAlIA4gBARIYCgtrbm9ja19saW1pdBgTIAEoBUgEiAEBEiIKBWtub2NrGBQgASgLMhMucnVtbXkudjEuS25vY2tJbmZvEicKCWxhc3RfaGFuZBgVIAEoCzIULnJ1bW15LnYxLkhhbmRSZXN1bHQSJQoGcmVzdWx0GBYgASgLMhUucnVtbXkudjEuTWF0Y2hSZXN1bHQSIwoLbGVnYWxfbW92ZXMYFyADKAsyDi5ydW1teS52MS5Nb3ZlEh0KFWhvbGx5d29vZF9nYW1lc19lbmRlZBgYIAMoCBIeCgVoYW5kcxgZIAMoCzIPLnJ1bW15LnYxLkNhcmRzEg0KBXN0b2NrGBogAygJQg4KDF92aWV3ZXJfc2VhdEIJCgdfdG9fYWN0Qg0KC190YWtlbl9jYXJkQgkKB191cGNhcmRCDgoMX2tub2NrX2xpbWl0IngKBUV2ZW50Eg8KB3ZlcnNpb24YASABKAQSDQoFaW5kZXgYAiABKA0SDAoEa2luZBgDIAEoCRIRCgRzZWF0GAQgASgFSACIAQESJQoEZGF0YRgFIAEoCzIXLmdvb2dsZS5wcm90b2J1Zi5TdHJ1Y3RCBwoFX3NlYXQiXQoIU2VhdFNwZWMSFAoMZGlzcGxheV9uYW1lGAEgASgJEiAKBGtpbmQYAiABKA4yEi5ydW1teS52MS5TZWF0S2luZBIMCgRvcGVuGAMgASgIEgsKA2JvdBgEIAEoCSL6AgoMR2FtZVNldHRpbmdzEg8KB3Byb2ZpbGUYASABKAkSNAoHb3B0aW9ucxgCIAMoCzIjLnJ1bW15LnYxLkdhbWVTZXR0aW5ncy5PcHRpb25zRW50cnkSIQoFc2VhdHMYAyADKAsyEi5ydW1teS52MS5TZWF0U3BlYxIaChJzcGVjdGF0b3JzX2FsbG93ZWQYBCABKAgSFwoPb3JnYW5pemVyX2RlYWxzGAUgASgIEhcKD3NlZWRfY29tbWl0bWVudBgGIAEoCRIMCgRzZWVkGAcgASgMEioKDHByZXNldF9kZWFscxgIIAMoCzIULnJ1bW15LnYxLlByZXNldERlYWwSMQoPc3BlY3RhdG9yX2RlbGF5GAsgASgLMhgucnVtbXkudjEuU3BlY3RhdG9yRGVsYXkaRQoMT3B0aW9uc0VudHJ5EgsKA2tleRgBIAEoCRIkCgV2YWx1ZRgCIAEoCzIVLnJ1bW15LnYxLk9wdGlvblZhbHVlOgI4ASI3Cg5TcGVjdGF0b3JEZWxheRINCgVtb3ZlcxgBIAEoDRIWCg51bnRpbF9oYW5kX2VuZBgCIAEoCCJbCgpQcmVzZXREZWFsEg4KBmRlYWxlchgBIAEoBRIeCgVoYW5kcxgCIAMoCzIPLnJ1bW15LnYxLkNhcmRzEg4KBnVwY2FyZBgDIAEoCRINCgVzdG9jaxgEIAMoCSpNCghHYW1lS2luZBIZChVHQU1FX0tJTkRfVU5TUEVDSUZJRUQQABIRCg1HQU1FX0tJTkRfR0lOEAESEwoPR0FNRV9LSU5EX1JVTU1ZEAIqpgEKBVBoYXNlEhUKEVBIQVNFX1VOU1BFQ0lGSUVEEAASFgoSUEhBU0VfVEFLRV9PUl9QQVNTEAESDgoKUEhBU0VfRFJBVxACEhEKDVBIQVNFX0RJU0NBUkQQAxIOCgpQSEFTRV9QTEFZEAQSEAoMUEhBU0VfTEFZT0ZGEAUSEwoPUEhBU0VfTEFTVF9DQVJEEAYSFAoQUEhBU0VfTUFUQ0hfT1ZFUhAHKlEKBFJvbGUSFAoQUk9MRV9VTlNQRUNJRklFRBAAEg0KCVJPTEVfU0VBVBABEhIKDlJPTEVfU1BFQ1RBVE9SEAISEAoMUk9MRV9SRUZFUkVFEAMqTQoIU2VhdEtpbmQSGQoVU0VBVF9LSU5EX1VOU1BFQ0lGSUVEEAASEwoPU0VBVF9LSU5EX0hVTUFOEAESEQoNU0VBVF9LSU5EX0JPVBACKksKCE1lbGRLaW5kEhkKFU1FTERfS0lORF9VTlNQRUNJRklFRBAAEhEKDU1FTERfS0lORF9TRVQQARIRCg1NRUxEX0tJTkRfUlVOEAIqgwEKCE1hdGNoRW5kEhkKFU1BVENIX0VORF9VTlNQRUNJRklFRBAAEhcKE01BVENIX0VORF9DT01QTEVURUQQARIWChJNQVRDSF9FTkRfUkVTSUdORUQQAhISCg5NQVRDSF9FTkRfVElNRRADEhcKE01BVENIX0VORF9PUkdBTklaRVIQBCqRAQoHU2VhdEVuZBIYChRTRUFUX0VORF9VTlNQRUNJRklFRBAAEhUKEVNFQVRfRU5EX0ZJTklTSEVEEAESFQoRU0VBVF9FTkRfUkVTSUdORUQQAhIZChVTRUFUX0VORF9MT1NUX09OX1RJTUUQAxIjCh9TRUFUX0VORF9GT1JGRUlURURfQllfT1JHQU5JWkVSEARiBnByb3RvMw", [file_google_protobuf_struct]);
var OptionValueSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 0);
var CardsSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 1);
var MeldsSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 2);
var MoveSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3);
var Move_DrawStockSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 0);
var Move_DrawDiscardSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 1);
var Move_PassTurnSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 2);
var Move_DiscardSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 3);
var Move_KnockSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 4);
var Move_BigGinSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 5);
var Move_MeldSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 6);
var Move_LayOffSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 7);
var Move_DeclareSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 8);
var Move_DoneSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 3, 9);
var LayOffCardSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 4);
var LaidOffSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 5);
var TableMeldSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 6);
var SeatViewSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 7);
var KnockInfoSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 8);
var HandResultSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 9);
var MatchResultSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 10);
var GameViewSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 11);
var EventSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 12);
var SeatSpecSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 13);
var GameSettingsSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 14);
var SpectatorDelaySchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15);
var PresetDealSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 16);
var GameKind = /* @__PURE__ */ ((GameKind2) => {
  GameKind2[GameKind2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  GameKind2[GameKind2["GIN"] = 1] = "GIN";
  GameKind2[GameKind2["RUMMY"] = 2] = "RUMMY";
  return GameKind2;
})(GameKind || {});
var GameKindSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 0);
var Phase = /* @__PURE__ */ ((Phase2) => {
  Phase2[Phase2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  Phase2[Phase2["TAKE_OR_PASS"] = 1] = "TAKE_OR_PASS";
  Phase2[Phase2["DRAW"] = 2] = "DRAW";
  Phase2[Phase2["DISCARD"] = 3] = "DISCARD";
  Phase2[Phase2["PLAY"] = 4] = "PLAY";
  Phase2[Phase2["LAYOFF"] = 5] = "LAYOFF";
  Phase2[Phase2["LAST_CARD"] = 6] = "LAST_CARD";
  Phase2[Phase2["MATCH_OVER"] = 7] = "MATCH_OVER";
  return Phase2;
})(Phase || {});
var PhaseSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 1);
var Role = /* @__PURE__ */ ((Role2) => {
  Role2[Role2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  Role2[Role2["SEAT"] = 1] = "SEAT";
  Role2[Role2["SPECTATOR"] = 2] = "SPECTATOR";
  Role2[Role2["REFEREE"] = 3] = "REFEREE";
  return Role2;
})(Role || {});
var RoleSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 2);
var SeatKind = /* @__PURE__ */ ((SeatKind2) => {
  SeatKind2[SeatKind2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  SeatKind2[SeatKind2["HUMAN"] = 1] = "HUMAN";
  SeatKind2[SeatKind2["BOT"] = 2] = "BOT";
  return SeatKind2;
})(SeatKind || {});
var SeatKindSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 3);
var MeldKind = /* @__PURE__ */ ((MeldKind2) => {
  MeldKind2[MeldKind2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  MeldKind2[MeldKind2["SET"] = 1] = "SET";
  MeldKind2[MeldKind2["RUN"] = 2] = "RUN";
  return MeldKind2;
})(MeldKind || {});
var MeldKindSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 4);
var MatchEnd = /* @__PURE__ */ ((MatchEnd2) => {
  MatchEnd2[MatchEnd2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  MatchEnd2[MatchEnd2["COMPLETED"] = 1] = "COMPLETED";
  MatchEnd2[MatchEnd2["RESIGNED"] = 2] = "RESIGNED";
  MatchEnd2[MatchEnd2["TIME"] = 3] = "TIME";
  MatchEnd2[MatchEnd2["ORGANIZER"] = 4] = "ORGANIZER";
  return MatchEnd2;
})(MatchEnd || {});
var MatchEndSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 5);
var SeatEnd = /* @__PURE__ */ ((SeatEnd2) => {
  SeatEnd2[SeatEnd2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  SeatEnd2[SeatEnd2["FINISHED"] = 1] = "FINISHED";
  SeatEnd2[SeatEnd2["RESIGNED"] = 2] = "RESIGNED";
  SeatEnd2[SeatEnd2["LOST_ON_TIME"] = 3] = "LOST_ON_TIME";
  SeatEnd2[SeatEnd2["FORFEITED_BY_ORGANIZER"] = 4] = "FORFEITED_BY_ORGANIZER";
  return SeatEnd2;
})(SeatEnd || {});
var SeatEndSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 6);

// src/gen/rummy/v1/referee_pb.ts
import { fileDesc as fileDesc2, messageDesc as messageDesc2, serviceDesc } from "@bufbuild/protobuf/codegenv2";
var file_rummy_v1_referee = /* @__PURE__ */ fileDesc2("ChZydW1teS92MS9yZWZlcmVlLnByb3RvEghydW1teS52MSL4AgoRQ3JlYXRlR2FtZVJlcXVlc3QSDwoHcHJvZmlsZRgBIAEoCRI5CgdvcHRpb25zGAIgAygLMigucnVtbXkudjEuQ3JlYXRlR2FtZVJlcXVlc3QuT3B0aW9uc0VudHJ5EiEKBXNlYXRzGAMgAygLMhIucnVtbXkudjEuU2VhdFNwZWMSJgoFbWF0Y2gYBCABKAsyFy5ydW1teS52MS5NYXRjaFNldHRpbmdzEhgKEGFsbG93X3NwZWN0YXRvcnMYBSABKAgSKgoMcHJlc2V0X2RlYWxzGAYgAygLMhQucnVtbXkudjEuUHJlc2V0RGVhbBIMCgRzZWVkGAcgASgMEjEKD3NwZWN0YXRvcl9kZWxheRgKIAEoCzIYLnJ1bW15LnYxLlNwZWN0YXRvckRlbGF5GkUKDE9wdGlvbnNFbnRyeRILCgNrZXkYASABKAkSJAoFdmFsdWUYAiABKAsyFS5ydW1teS52MS5PcHRpb25WYWx1ZToCOAEiYQoNTWF0Y2hTZXR0aW5ncxIZCgx0YXJnZXRfc2NvcmUYASABKAVIAIgBARIWCgltYXhfaGFuZHMYAiABKAVIAYgBAUIPCg1fdGFyZ2V0X3Njb3JlQgwKCl9tYXhfaGFuZHMiKAoJU2VhdFRva2VuEgwKBHNlYXQYASABKAUSDQoFdG9rZW4YAiABKAkivAEKEkNyZWF0ZUdhbWVSZXNwb25zZRIPCgdnYW1lX2lkGAEgASgJEigKC3NlYXRfdG9rZW5zGAIgAygLMhMucnVtbXkudjEuU2VhdFRva2VuEhcKD3NwZWN0YXRvcl90b2tlbhgDIAEoCRIoCghzZXR0aW5ncxgEIAEoCzIWLnJ1bW15LnYxLkdhbWVTZXR0aW5ncxIPCgd2ZXJzaW9uGAUgASgEEhcKD3NlZWRfY29tbWl0bWVudBgGIAEoCSJUCg9Kb2luR2FtZVJlcXVlc3QSDwoHZ2FtZV9pZBgBIAEoCRIRCgRzZWF0GAIgASgFSACIAQESFAoMZGlzcGxheV9uYW1lGAMgASgJQgcKBV9zZWF0Ii8KEEpvaW5HYW1lUmVzcG9uc2USDAoEc2VhdBgBIAEoBRINCgV0b2tlbhgCIAEoCSIhCg5HZXRHYW1lUmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJIl0KD0dldEdhbWVSZXNwb25zZRIgCgR2aWV3GAEgASgLMhIucnVtbXkudjEuR2FtZVZpZXcSKAoIc2V0dGluZ3MYAiABKAsyFi5ydW1teS52MS5HYW1lU2V0dGluZ3MiigEKEVN1Ym1pdE1vdmVSZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSHAoEbW92ZRgCIAEoCzIOLnJ1bW15LnYxLk1vdmUSHQoQZXhwZWN0ZWRfdmVyc2lvbhgDIAEoBEgAiAEBEhIKCnJlcXVlc3RfaWQYBCABKAlCEwoRX2V4cGVjdGVkX3ZlcnNpb24iaAoSU3VibWl0TW92ZVJlc3BvbnNlEg8KB3ZlcnNpb24YASABKAQSHwoGZXZlbnRzGAIgAygLMg8ucnVtbXkudjEuRXZlbnQSIAoEdmlldxgDIAEoCzISLnJ1bW15LnYxLkdhbWVWaWV3ImgKDVJlc2lnblJlcXVlc3QSDwoHZ2FtZV9pZBgBIAEoCRIdChBleHBlY3RlZF92ZXJzaW9uGAIgASgESACIAQESEgoKcmVxdWVzdF9pZBgDIAEoCUITChFfZXhwZWN0ZWRfdmVyc2lvbiJkCg5SZXNpZ25SZXNwb25zZRIPCgd2ZXJzaW9uGAEgASgEEh8KBmV2ZW50cxgCIAMoCzIPLnJ1bW15LnYxLkV2ZW50EiAKBHZpZXcYAyABKAsyEi5ydW1teS52MS5HYW1lVmlldyJ4ChNWYWxpZGF0ZU1vdmVSZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSHAoEbW92ZRgCIAEoCzIOLnJ1bW15LnYxLk1vdmUSHQoQZXhwZWN0ZWRfdmVyc2lvbhgDIAEoBEgAiAEBQhMKEV9leHBlY3RlZF92ZXJzaW9uIicKFFZhbGlkYXRlTW92ZVJlc3BvbnNlEg8KB3ZlcnNpb24YASABKAQiewoQV2F0Y2hHYW1lUmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhoKDWFmdGVyX3ZlcnNpb24YAiABKARIAIgBARIYCgthZnRlcl9pbmRleBgDIAEoDUgBiAEBQhAKDl9hZnRlcl92ZXJzaW9uQg4KDF9hZnRlcl9pbmRleCJnChFXYXRjaEdhbWVSZXNwb25zZRImCghzbmFwc2hvdBgBIAEoCzISLnJ1bW15LnYxLkdhbWVWaWV3SAASIAoFZXZlbnQYAiABKAsyDy5ydW1teS52MS5FdmVudEgAQggKBnVwZGF0ZSJlChBHZXRSZXBsYXlSZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSGgoNYWZ0ZXJfdmVyc2lvbhgCIAEoBEgAiAEBEhIKCm1heF9ldmVudHMYAyABKA1CEAoOX2FmdGVyX3ZlcnNpb24i4AEKEUdldFJlcGxheVJlc3BvbnNlEigKCHNldHRpbmdzGAEgASgLMhYucnVtbXkudjEuR2FtZVNldHRpbmdzEiMKB2luaXRpYWwYAiABKAsyEi5ydW1teS52MS5HYW1lVmlldxIfCgZldmVudHMYAyADKAsyDy5ydW1teS52MS5FdmVudBIjCgdjdXJyZW50GAQgASgLMhIucnVtbXkudjEuR2FtZVZpZXcSHwoSbmV4dF9hZnRlcl92ZXJzaW9uGAUgASgESACIAQFCFQoTX25leHRfYWZ0ZXJfdmVyc2lvbiK3AQoSQW5hbHl6ZUhhbmRSZXF1ZXN0Eg0KBWNhcmRzGAEgAygJEg8KB3Byb2ZpbGUYAiABKAkSOgoHb3B0aW9ucxgDIAMoCzIpLnJ1bW15LnYxLkFuYWx5emVIYW5kUmVxdWVzdC5PcHRpb25zRW50cnkaRQoMT3B0aW9uc0VudHJ5EgsKA2tleRgBIAEoCRIkCgV2YWx1ZRgCIAEoCzIVLnJ1bW15LnYxLk9wdGlvblZhbHVlOgI4ASJFCgtBcnJhbmdlbWVudBIeCgVtZWxkcxgBIAMoCzIPLnJ1bW15LnYxLkNhcmRzEhYKDmRlYWR3b29kX2NhcmRzGAIgAygJIi4KDEtub2NrRGlzY2FyZBIMCgRjYXJkGAEgASgJEhAKCGRlYWR3b29kGAIgASgFIqgBChNBbmFseXplSGFuZFJlc3BvbnNlEhQKDG1pbl9kZWFkd29vZBgBIAEoBRIrCgxhcnJhbmdlbWVudHMYAiADKAsyFS5ydW1teS52MS5BcnJhbmdlbWVudBIeChZhcnJhbmdlbWVudHNfdHJ1bmNhdGVkGAMgASgIEi4KDmtub2NrX2Rpc2NhcmRzGAQgAygLMhYucnVtbXkudjEuS25vY2tEaXNjYXJkIg0KC1BpbmdSZXF1ZXN0Ig4KDFBpbmdSZXNwb25zZTLWBQoOUmVmZXJlZVNlcnZpY2USRwoKQ3JlYXRlR2FtZRIbLnJ1bW15LnYxLkNyZWF0ZUdhbWVSZXF1ZXN0GhwucnVtbXkudjEuQ3JlYXRlR2FtZVJlc3BvbnNlEkEKCEpvaW5HYW1lEhkucnVtbXkudjEuSm9pbkdhbWVSZXF1ZXN0GhoucnVtbXkudjEuSm9pbkdhbWVSZXNwb25zZRJDCgdHZXRHYW1lEhgucnVtbXkudjEuR2V0R2FtZVJlcXVlc3QaGS5ydW1teS52MS5HZXRHYW1lUmVzcG9uc2UiA5ACARJHCgpTdWJtaXRNb3ZlEhsucnVtbXkudjEuU3VibWl0TW92ZVJlcXVlc3QaHC5ydW1teS52MS5TdWJtaXRNb3ZlUmVzcG9uc2USOwoGUmVzaWduEhcucnVtbXkudjEuUmVzaWduUmVxdWVzdBoYLnJ1bW15LnYxLlJlc2lnblJlc3BvbnNlEk0KDFZhbGlkYXRlTW92ZRIdLnJ1bW15LnYxLlZhbGlkYXRlTW92ZVJlcXVlc3QaHi5ydW1teS52MS5WYWxpZGF0ZU1vdmVSZXNwb25zZRJGCglXYXRjaEdhbWUSGi5ydW1teS52MS5XYXRjaEdhbWVSZXF1ZXN0GhsucnVtbXkudjEuV2F0Y2hHYW1lUmVzcG9uc2UwARJJCglHZXRSZXBsYXkSGi5ydW1teS52MS5HZXRSZXBsYXlSZXF1ZXN0GhsucnVtbXkudjEuR2V0UmVwbGF5UmVzcG9uc2UiA5ACARJPCgtBbmFseXplSGFuZBIcLnJ1bW15LnYxLkFuYWx5emVIYW5kUmVxdWVzdBodLnJ1bW15LnYxLkFuYWx5emVIYW5kUmVzcG9uc2UiA5ACARI6CgRQaW5nEhUucnVtbXkudjEuUGluZ1JlcXVlc3QaFi5ydW1teS52MS5QaW5nUmVzcG9uc2UiA5ACAWIGcHJvdG8z", [file_rummy_v1_game]);
var CreateGameRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 0);
var MatchSettingsSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 1);
var SeatTokenSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 2);
var CreateGameResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 3);
var JoinGameRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 4);
var JoinGameResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 5);
var GetGameRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 6);
var GetGameResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 7);
var SubmitMoveRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 8);
var SubmitMoveResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 9);
var ResignRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 10);
var ResignResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 11);
var ValidateMoveRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 12);
var ValidateMoveResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 13);
var WatchGameRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 14);
var WatchGameResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 15);
var GetReplayRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 16);
var GetReplayResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 17);
var AnalyzeHandRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 18);
var ArrangementSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 19);
var KnockDiscardSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 20);
var AnalyzeHandResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 21);
var PingRequestSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 22);
var PingResponseSchema = /* @__PURE__ */ messageDesc2(file_rummy_v1_referee, 23);
var RefereeService = /* @__PURE__ */ serviceDesc(file_rummy_v1_referee, 0);

// src/referee.ts
function refereeClient(transport) {
  return createClient(RefereeService, transport);
}
function roundRobin(transports) {
  let next = 0;
  const pick = () => transports[next++ % transports.length];
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => pick().unary(method, signal, timeoutMs, header, input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) => pick().stream(method, signal, timeoutMs, header, input, contextValues)
  };
}
function auth(token, extra = {}) {
  return { ...extra, headers: { authorization: `Bearer ${token}` } };
}
function refusal(err) {
  const e = ConnectError.from(err);
  let reason = "";
  for (const d of e.details) {
    if ("type" in d && d.type === "google.rpc.ErrorInfo") {
      reason = errorInfoReason(d.value);
    }
  }
  return { code: Code[e.code] ?? String(e.code), reason, message: e.rawMessage };
}
function errorInfoReason(bytes) {
  const r = new BinaryReader(bytes);
  let reason = "";
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) reason = r.string();
    else r.skip(wire);
  }
  return reason;
}
function move(m) {
  return create(MoveSchema, { move: m });
}
function moveText(m) {
  const x = m.move;
  switch (x.case) {
    case "drawStock":
      return "draw stock";
    case "drawDiscard":
      return "draw discard";
    case "passTurn":
      return "pass";
    case "discard":
      return `discard ${x.value.card}`;
    case "knock":
      return `knock ${x.value.discard}`;
    case "bigGin":
      return "big_gin";
    case "meld":
      return `meld ${x.value.cards.join(" ")}`;
    case "layOff":
      return `layoff ${x.value.card} ${x.value.meldId}`;
    case "declare":
      return x.value.best ? "declare best" : "declare";
    case "done":
      return "done";
    default:
      return "?";
  }
}
var RETRYABLE = /* @__PURE__ */ new Set([
  Code.Unavailable,
  Code.Unknown,
  Code.Internal,
  Code.DeadlineExceeded,
  Code.Canceled,
  Code.ResourceExhausted,
  Code.Aborted
]);
async function* watchGame(client, gameId, token, opts = {}) {
  let pos = opts.after;
  let failures = 0;
  for (; ; ) {
    try {
      const req = pos === void 0 ? { gameId } : { gameId, afterVersion: pos.version, afterIndex: pos.index };
      for await (const update of client.watchGame(req, auth(token, { signal: opts.signal, onHeader: () => opts.onOpen?.() }))) {
        failures = 0;
        if (update.update.case === "event") {
          const ev = update.update.value;
          pos = { version: ev.version, index: ev.index };
        } else if (update.update.case === "snapshot") {
          pos = { version: update.update.value.version };
        }
        yield update;
        if (update.update.case === "event" && update.update.value.kind === "match_ended") return;
      }
      return;
    } catch (err) {
      if (opts.signal?.aborted) return;
      const e = ConnectError.from(err);
      failures += 1;
      if (!RETRYABLE.has(e.code) || failures > (opts.maxAttempts ?? 30)) throw err;
      opts.onCut?.(err, failures);
      await new Promise((resolve) => setTimeout(resolve, Math.min(2e3, 100 * 2 ** failures)));
    }
  }
}
function legal(view, kind) {
  return view.legalMoves.map((m) => m.move).filter((m) => m.case === kind);
}

// src/node.ts
function pem(value) {
  return value === void 0 || value.includes("-----BEGIN ") ? value : readFileSync(value, "utf8");
}
function connectReferee(baseUrl, opts = {}) {
  const urls = (Array.isArray(baseUrl) ? baseUrl : baseUrl.split(",")).map((u) => u.trim()).filter((u) => u);
  if (urls.length === 0) throw new Error(`no referee address in ${JSON.stringify(baseUrl)}`);
  const tls = { ca: pem(opts.ca), cert: pem(opts.clientCert), key: pem(opts.clientKey) };
  const transports = urls.map(
    (url) => createConnectTransport({
      baseUrl: url,
      httpVersion: "1.1",
      useBinaryFormat: opts.binary ?? false,
      nodeOptions: url.startsWith("https:") ? tls : void 0
    })
  );
  return refereeClient(transports.length === 1 ? transports[0] : roundRobin(transports));
}
export {
  AnalyzeHandRequestSchema,
  AnalyzeHandResponseSchema,
  ArrangementSchema,
  CardsSchema,
  Code,
  ConnectError,
  CreateGameRequestSchema,
  CreateGameResponseSchema,
  EventSchema,
  GameKind,
  GameKindSchema,
  GameSettingsSchema,
  GameViewSchema,
  GetGameRequestSchema,
  GetGameResponseSchema,
  GetReplayRequestSchema,
  GetReplayResponseSchema,
  HandResultSchema,
  JoinGameRequestSchema,
  JoinGameResponseSchema,
  KnockDiscardSchema,
  KnockInfoSchema,
  LaidOffSchema,
  LayOffCardSchema,
  MatchEnd,
  MatchEndSchema,
  MatchResultSchema,
  MatchSettingsSchema,
  MeldKind,
  MeldKindSchema,
  MeldsSchema,
  MoveSchema,
  Move_BigGinSchema,
  Move_DeclareSchema,
  Move_DiscardSchema,
  Move_DoneSchema,
  Move_DrawDiscardSchema,
  Move_DrawStockSchema,
  Move_KnockSchema,
  Move_LayOffSchema,
  Move_MeldSchema,
  Move_PassTurnSchema,
  OptionValueSchema,
  Phase,
  PhaseSchema,
  PingRequestSchema,
  PingResponseSchema,
  PresetDealSchema,
  RefereeService,
  ResignRequestSchema,
  ResignResponseSchema,
  Role,
  RoleSchema,
  SeatEnd,
  SeatEndSchema,
  SeatKind,
  SeatKindSchema,
  SeatSpecSchema,
  SeatTokenSchema,
  SeatViewSchema,
  SpectatorDelaySchema,
  SubmitMoveRequestSchema,
  SubmitMoveResponseSchema,
  TableMeldSchema,
  ValidateMoveRequestSchema,
  ValidateMoveResponseSchema,
  WatchGameRequestSchema,
  WatchGameResponseSchema,
  auth,
  connectReferee,
  file_rummy_v1_game,
  file_rummy_v1_referee,
  legal,
  move,
  moveText,
  refereeClient,
  refusal,
  roundRobin,
  watchGame
};
