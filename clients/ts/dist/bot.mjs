// src/bot.ts
import { parseArgs } from "node:util";

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
var file_rummy_v1_game = /* @__PURE__ */ fileDesc("ChNydW1teS92MS9nYW1lLnByb3RvEghydW1teS52MSJZCgtPcHRpb25WYWx1ZRIUCgpib29sX3ZhbHVlGAEgASgISAASEwoJaW50X3ZhbHVlGAIgASgDSAASFgoMc3RyaW5nX3ZhbHVlGAMgASgJSABCBwoFdmFsdWUiFgoFQ2FyZHMSDQoFY2FyZHMYASADKAkiJwoFTWVsZHMSHgoFbWVsZHMYASADKAsyDy5ydW1teS52MS5DYXJkcyKIBgoETW92ZRIuCgpkcmF3X3N0b2NrGAEgASgLMhgucnVtbXkudjEuTW92ZS5EcmF3U3RvY2tIABIyCgxkcmF3X2Rpc2NhcmQYAiABKAsyGi5ydW1teS52MS5Nb3ZlLkRyYXdEaXNjYXJkSAASLAoJcGFzc190dXJuGAMgASgLMhcucnVtbXkudjEuTW92ZS5QYXNzVHVybkgAEikKB2Rpc2NhcmQYBCABKAsyFi5ydW1teS52MS5Nb3ZlLkRpc2NhcmRIABIlCgVrbm9jaxgFIAEoCzIULnJ1bW15LnYxLk1vdmUuS25vY2tIABIoCgdiaWdfZ2luGAYgASgLMhUucnVtbXkudjEuTW92ZS5CaWdHaW5IABIjCgRtZWxkGAcgASgLMhMucnVtbXkudjEuTW92ZS5NZWxkSAASKAoHbGF5X29mZhgIIAEoCzIVLnJ1bW15LnYxLk1vdmUuTGF5T2ZmSAASKQoHZGVjbGFyZRgJIAEoCzIWLnJ1bW15LnYxLk1vdmUuRGVjbGFyZUgAEiMKBGRvbmUYCiABKAsyEy5ydW1teS52MS5Nb3ZlLkRvbmVIABoLCglEcmF3U3RvY2saDQoLRHJhd0Rpc2NhcmQaCgoIUGFzc1R1cm4aFwoHRGlzY2FyZBIMCgRjYXJkGAEgASgJGjgKBUtub2NrEg8KB2Rpc2NhcmQYASABKAkSHgoFbWVsZHMYAiABKAsyDy5ydW1teS52MS5NZWxkcxooCgZCaWdHaW4SHgoFbWVsZHMYASABKAsyDy5ydW1teS52MS5NZWxkcxoVCgRNZWxkEg0KBWNhcmRzGAEgAygJGicKBkxheU9mZhIMCgRjYXJkGAEgASgJEg8KB21lbGRfaWQYAiABKAUaXgoHRGVjbGFyZRIeCgVtZWxkcxgBIAMoCzIPLnJ1bW15LnYxLkNhcmRzEiUKB2xheW9mZnMYAiADKAsyFC5ydW1teS52MS5MYXlPZmZDYXJkEgwKBGJlc3QYAyABKAgaBgoERG9uZUIGCgRtb3ZlIisKCkxheU9mZkNhcmQSDAoEY2FyZBgBIAEoCRIPCgdtZWxkX2lkGAIgASgFIiUKB0xhaWRPZmYSDAoEY2FyZBgBIAEoCRIMCgRzZWF0GAIgASgFInsKCVRhYmxlTWVsZBIKCgJpZBgBIAEoBRINCgVvd25lchgCIAEoBRIgCgRraW5kGAMgASgOMhIucnVtbXkudjEuTWVsZEtpbmQSDQoFY2FyZHMYBCADKAkSIgoHbGF5b2ZmcxgFIAMoCzIRLnJ1bW15LnYxLkxhaWRPZmYi1wEKCFNlYXRWaWV3EgwKBHNlYXQYASABKAUSFAoMZGlzcGxheV9uYW1lGAIgASgJEiAKBGtpbmQYAyABKA4yEi5ydW1teS52MS5TZWF0S2luZBIMCgRvcGVuGAQgASgIEhEKCWhhbmRfc2l6ZRgFIAEoBRITCgtrbm93bl9jYXJkcxgGIAMoCRINCgVzY29yZRgHIAEoBRINCgVib3hlcxgIIAEoBRIYChBob2xseXdvb2Rfc2NvcmVzGAkgAygFEhcKD2hvbGx5d29vZF9ib3hlcxgKIAMoBSJGCglLbm9ja0luZm8SDwoHa25vY2tlchgBIAEoBRIQCghkZWFkd29vZBgCIAEoBRIWCg5kZWFkd29vZF9jYXJkcxgDIAMoCSKGAwoKSGFuZFJlc3VsdBITCgtoYW5kX251bWJlchgBIAEoBRIOCgZyZWFzb24YAiABKAkSEwoGd2lubmVyGAMgASgFSACIAQESDgoGcG9pbnRzGAQgASgFEh4KBWhhbmRzGAUgAygLMg8ucnVtbXkudjEuQ2FyZHMSEwoLaGFuZF92YWx1ZXMYBiADKAUSDgoGc2NvcmVzGAcgAygFEhQKB2tub2NrZXIYCCABKAVIAYgBARIdChBrbm9ja2VyX2RlYWR3b29kGAkgASgFSAKIAQESHgoRZGVmZW5kZXJfZGVhZHdvb2QYCiABKAVIA4gBARIYCgtnb2luZ19ydW1teRgLIAEoCEgEiAEBEigKB2RldGFpbHMYDCABKAsyFy5nb29nbGUucHJvdG9idWYuU3RydWN0QgkKB193aW5uZXJCCgoIX2tub2NrZXJCEwoRX2tub2NrZXJfZGVhZHdvb2RCFAoSX2RlZmVuZGVyX2RlYWR3b29kQg4KDF9nb2luZ19ydW1teSLPAQoLTWF0Y2hSZXN1bHQSDgoGdG90YWxzGAEgAygFEg8KB3dpbm5lcnMYAiADKAUSKAoHZGV0YWlscxgDIAEoCzIXLmdvb2dsZS5wcm90b2J1Zi5TdHJ1Y3QSIQoFZW5kZWQYBCABKA4yEi5ydW1teS52MS5NYXRjaEVuZBIkCglzZWF0X2VuZHMYBSADKA4yES5ydW1teS52MS5TZWF0RW5kEhoKDXJlc2lnbmVkX3NlYXQYBiABKAVIAIgBAUIQCg5fcmVzaWduZWRfc2VhdCLOBgoIR2FtZVZpZXcSDwoHZ2FtZV9pZBgBIAEoCRIPCgd2ZXJzaW9uGAIgASgEEiMKC3ZpZXdlcl9yb2xlGAMgASgOMg4ucnVtbXkudjEuUm9sZRIYCgt2aWV3ZXJfc2VhdBgEIAEoBUgAiAEBEiAKBGdhbWUYBSABKA4yEi5ydW1teS52MS5HYW1lS2luZBIeCgVwaGFzZRgGIAEoDjIPLnJ1bW15LnYxLlBoYXNlEhMKBnRvX2FjdBgHIAEoBUgBiAEBEg4KBmRlYWxlchgIIAEoBRITCgtoYW5kX251bWJlchgJIAEoBRIhCgVzZWF0cxgKIAMoCzISLnJ1bW15LnYxLlNlYXRWaWV3EgwKBGhhbmQYCyADKAkSIgoFbWVsZHMYDCADKAsyEy5ydW1teS52MS5UYWJsZU1lbGQSFAoMZGlzY2FyZF9waWxlGA0gAygJEhIKCnN0b2NrX3NpemUYDiABKAUSFwoKdGFrZW5fY2FyZBgPIAEoCUgCiAEBEg0KBXR1cm5zGBAgASgFEhQKDGhhbmRzX3BsYXllZBgRIAEoBRITCgZ1cGNhcmQYEiABKAlIA4gBARIYCgtrbm9ja19saW1pdBgTIAEoBUgEiAEBEiIKBWtub2NrGBQgASgLMhMucnVtbXkudjEuS25vY2tJbmZvEicKCWxhc3RfaGFuZBgVIAEoCzIULnJ1bW15LnYxLkhhbmRSZXN1bHQSJQoGcmVzdWx0GBYgASgLMhUucnVtbXkudjEuTWF0Y2hSZXN1bHQSIwoLbGVnYWxfbW92ZXMYFyADKAsyDi5ydW1teS52MS5Nb3ZlEh0KFWhvbGx5d29vZF9nYW1lc19lbmRlZBgYIAMoCBIeCgVoYW5kcxgZIAMoCzIPLnJ1bW15LnYxLkNhcmRzEg0KBXN0b2NrGBogAygJEiMKBmNsb2NrcxgbIAMoCzITLnJ1bW15LnYxLlNlYXRDbG9jaxIYCgtkZWFkbGluZV9tcxgcIAEoA0gFiAEBQg4KDF92aWV3ZXJfc2VhdEIJCgdfdG9fYWN0Qg0KC190YWtlbl9jYXJkQgkKB191cGNhcmRCDgoMX2tub2NrX2xpbWl0Qg4KDF9kZWFkbGluZV9tcyLHAQoFRXZlbnQSDwoHdmVyc2lvbhgBIAEoBBINCgVpbmRleBgCIAEoDRIMCgRraW5kGAMgASgJEhEKBHNlYXQYBCABKAVIAIgBARIlCgRkYXRhGAUgASgLMhcuZ29vZ2xlLnByb3RvYnVmLlN0cnVjdBIjCgZjbG9ja3MYBiADKAsyEy5ydW1teS52MS5TZWF0Q2xvY2sSGAoLZGVhZGxpbmVfbXMYByABKANIAYgBAUIHCgVfc2VhdEIOCgxfZGVhZGxpbmVfbXMioQIKC1RpbWVDb250cm9sEjEKCHBlcl9tb3ZlGAEgASgLMh0ucnVtbXkudjEuVGltZUNvbnRyb2wuUGVyTW92ZUgAEiwKBWNsb2NrGAIgASgLMhsucnVtbXkudjEuVGltZUNvbnRyb2wuQ2xvY2tIABIqCgRiYW5rGAMgASgLMhoucnVtbXkudjEuVGltZUNvbnRyb2wuQmFua0gAGhsKB1Blck1vdmUSEAoIbGltaXRfbXMYASABKAMaMQoFQ2xvY2sSEgoKaW5pdGlhbF9tcxgBIAEoAxIUCgxpbmNyZW1lbnRfbXMYAiABKAMaLQoEQmFuaxIUCgxhbGxvd2FuY2VfbXMYASABKAMSDwoHYmFua19tcxgCIAEoA0IGCgRraW5kIp0BCg1UaW1lb3V0UG9saWN5EioKBGtpbmQYASABKA4yHC5ydW1teS52MS5UaW1lb3V0UG9saWN5LktpbmQSFgoObWF4X2F1dG9fbW92ZXMYAiABKAUiSAoES2luZBIUChBLSU5EX1VOU1BFQ0lGSUVEEAASFgoSS0lORF9GT1JGRUlUX01BVENIEAESEgoOS0lORF9BVVRPX01PVkUQAiKmAQoJU2VhdENsb2NrEgwKBHNlYXQYASABKAUSFAoMcmVtYWluaW5nX21zGAIgASgDEg8KB3J1bm5pbmcYAyABKAgSFwoKc3RhcnRlZF9tcxgEIAEoA0gAiAEBEhgKC2RlYWRsaW5lX21zGAUgASgDSAGIAQESEgoKYXV0b19tb3ZlcxgGIAEoBUINCgtfc3RhcnRlZF9tc0IOCgxfZGVhZGxpbmVfbXMiXQoIU2VhdFNwZWMSFAoMZGlzcGxheV9uYW1lGAEgASgJEiAKBGtpbmQYAiABKA4yEi5ydW1teS52MS5TZWF0S2luZBIMCgRvcGVuGAMgASgIEgsKA2JvdBgEIAEoCSLYAwoMR2FtZVNldHRpbmdzEg8KB3Byb2ZpbGUYASABKAkSNAoHb3B0aW9ucxgCIAMoCzIjLnJ1bW15LnYxLkdhbWVTZXR0aW5ncy5PcHRpb25zRW50cnkSIQoFc2VhdHMYAyADKAsyEi5ydW1teS52MS5TZWF0U3BlYxIaChJzcGVjdGF0b3JzX2FsbG93ZWQYBCABKAgSFwoPb3JnYW5pemVyX2RlYWxzGAUgASgIEhcKD3NlZWRfY29tbWl0bWVudBgGIAEoCRIMCgRzZWVkGAcgASgMEioKDHByZXNldF9kZWFscxgIIAMoCzIULnJ1bW15LnYxLlByZXNldERlYWwSKwoMdGltZV9jb250cm9sGAkgASgLMhUucnVtbXkudjEuVGltZUNvbnRyb2wSLwoOdGltZW91dF9wb2xpY3kYCiABKAsyFy5ydW1teS52MS5UaW1lb3V0UG9saWN5EjEKD3NwZWN0YXRvcl9kZWxheRgLIAEoCzIYLnJ1bW15LnYxLlNwZWN0YXRvckRlbGF5GkUKDE9wdGlvbnNFbnRyeRILCgNrZXkYASABKAkSJAoFdmFsdWUYAiABKAsyFS5ydW1teS52MS5PcHRpb25WYWx1ZToCOAEiNwoOU3BlY3RhdG9yRGVsYXkSDQoFbW92ZXMYASABKA0SFgoOdW50aWxfaGFuZF9lbmQYAiABKAgiWwoKUHJlc2V0RGVhbBIOCgZkZWFsZXIYASABKAUSHgoFaGFuZHMYAiADKAsyDy5ydW1teS52MS5DYXJkcxIOCgZ1cGNhcmQYAyABKAkSDQoFc3RvY2sYBCADKAkqTQoIR2FtZUtpbmQSGQoVR0FNRV9LSU5EX1VOU1BFQ0lGSUVEEAASEQoNR0FNRV9LSU5EX0dJThABEhMKD0dBTUVfS0lORF9SVU1NWRACKqYBCgVQaGFzZRIVChFQSEFTRV9VTlNQRUNJRklFRBAAEhYKElBIQVNFX1RBS0VfT1JfUEFTUxABEg4KClBIQVNFX0RSQVcQAhIRCg1QSEFTRV9ESVNDQVJEEAMSDgoKUEhBU0VfUExBWRAEEhAKDFBIQVNFX0xBWU9GRhAFEhMKD1BIQVNFX0xBU1RfQ0FSRBAGEhQKEFBIQVNFX01BVENIX09WRVIQBypRCgRSb2xlEhQKEFJPTEVfVU5TUEVDSUZJRUQQABINCglST0xFX1NFQVQQARISCg5ST0xFX1NQRUNUQVRPUhACEhAKDFJPTEVfUkVGRVJFRRADKk0KCFNlYXRLaW5kEhkKFVNFQVRfS0lORF9VTlNQRUNJRklFRBAAEhMKD1NFQVRfS0lORF9IVU1BThABEhEKDVNFQVRfS0lORF9CT1QQAipLCghNZWxkS2luZBIZChVNRUxEX0tJTkRfVU5TUEVDSUZJRUQQABIRCg1NRUxEX0tJTkRfU0VUEAESEQoNTUVMRF9LSU5EX1JVThACKoMBCghNYXRjaEVuZBIZChVNQVRDSF9FTkRfVU5TUEVDSUZJRUQQABIXChNNQVRDSF9FTkRfQ09NUExFVEVEEAESFgoSTUFUQ0hfRU5EX1JFU0lHTkVEEAISEgoOTUFUQ0hfRU5EX1RJTUUQAxIXChNNQVRDSF9FTkRfT1JHQU5JWkVSEAQqkQEKB1NlYXRFbmQSGAoUU0VBVF9FTkRfVU5TUEVDSUZJRUQQABIVChFTRUFUX0VORF9GSU5JU0hFRBABEhUKEVNFQVRfRU5EX1JFU0lHTkVEEAISGQoVU0VBVF9FTkRfTE9TVF9PTl9USU1FEAMSIwofU0VBVF9FTkRfRk9SRkVJVEVEX0JZX09SR0FOSVpFUhAEYgZwcm90bzM", [file_google_protobuf_struct]);

// src/gen/rummy/v1/referee_pb.ts
import { fileDesc as fileDesc2, messageDesc as messageDesc2, serviceDesc } from "@bufbuild/protobuf/codegenv2";
var file_rummy_v1_referee = /* @__PURE__ */ fileDesc2("ChZydW1teS92MS9yZWZlcmVlLnByb3RvEghydW1teS52MSLWAwoRQ3JlYXRlR2FtZVJlcXVlc3QSDwoHcHJvZmlsZRgBIAEoCRI5CgdvcHRpb25zGAIgAygLMigucnVtbXkudjEuQ3JlYXRlR2FtZVJlcXVlc3QuT3B0aW9uc0VudHJ5EiEKBXNlYXRzGAMgAygLMhIucnVtbXkudjEuU2VhdFNwZWMSJgoFbWF0Y2gYBCABKAsyFy5ydW1teS52MS5NYXRjaFNldHRpbmdzEhgKEGFsbG93X3NwZWN0YXRvcnMYBSABKAgSKgoMcHJlc2V0X2RlYWxzGAYgAygLMhQucnVtbXkudjEuUHJlc2V0RGVhbBIMCgRzZWVkGAcgASgMEisKDHRpbWVfY29udHJvbBgIIAEoCzIVLnJ1bW15LnYxLlRpbWVDb250cm9sEi8KDnRpbWVvdXRfcG9saWN5GAkgASgLMhcucnVtbXkudjEuVGltZW91dFBvbGljeRIxCg9zcGVjdGF0b3JfZGVsYXkYCiABKAsyGC5ydW1teS52MS5TcGVjdGF0b3JEZWxheRpFCgxPcHRpb25zRW50cnkSCwoDa2V5GAEgASgJEiQKBXZhbHVlGAIgASgLMhUucnVtbXkudjEuT3B0aW9uVmFsdWU6AjgBImEKDU1hdGNoU2V0dGluZ3MSGQoMdGFyZ2V0X3Njb3JlGAEgASgFSACIAQESFgoJbWF4X2hhbmRzGAIgASgFSAGIAQFCDwoNX3RhcmdldF9zY29yZUIMCgpfbWF4X2hhbmRzIigKCVNlYXRUb2tlbhIMCgRzZWF0GAEgASgFEg0KBXRva2VuGAIgASgJIrwBChJDcmVhdGVHYW1lUmVzcG9uc2USDwoHZ2FtZV9pZBgBIAEoCRIoCgtzZWF0X3Rva2VucxgCIAMoCzITLnJ1bW15LnYxLlNlYXRUb2tlbhIXCg9zcGVjdGF0b3JfdG9rZW4YAyABKAkSKAoIc2V0dGluZ3MYBCABKAsyFi5ydW1teS52MS5HYW1lU2V0dGluZ3MSDwoHdmVyc2lvbhgFIAEoBBIXCg9zZWVkX2NvbW1pdG1lbnQYBiABKAkiVAoPSm9pbkdhbWVSZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSEQoEc2VhdBgCIAEoBUgAiAEBEhQKDGRpc3BsYXlfbmFtZRgDIAEoCUIHCgVfc2VhdCIvChBKb2luR2FtZVJlc3BvbnNlEgwKBHNlYXQYASABKAUSDQoFdG9rZW4YAiABKAkiIQoOR2V0R2FtZVJlcXVlc3QSDwoHZ2FtZV9pZBgBIAEoCSJdCg9HZXRHYW1lUmVzcG9uc2USIAoEdmlldxgBIAEoCzISLnJ1bW15LnYxLkdhbWVWaWV3EigKCHNldHRpbmdzGAIgASgLMhYucnVtbXkudjEuR2FtZVNldHRpbmdzIooBChFTdWJtaXRNb3ZlUmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhwKBG1vdmUYAiABKAsyDi5ydW1teS52MS5Nb3ZlEh0KEGV4cGVjdGVkX3ZlcnNpb24YAyABKARIAIgBARISCgpyZXF1ZXN0X2lkGAQgASgJQhMKEV9leHBlY3RlZF92ZXJzaW9uImgKElN1Ym1pdE1vdmVSZXNwb25zZRIPCgd2ZXJzaW9uGAEgASgEEh8KBmV2ZW50cxgCIAMoCzIPLnJ1bW15LnYxLkV2ZW50EiAKBHZpZXcYAyABKAsyEi5ydW1teS52MS5HYW1lVmlldyJoCg1SZXNpZ25SZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSHQoQZXhwZWN0ZWRfdmVyc2lvbhgCIAEoBEgAiAEBEhIKCnJlcXVlc3RfaWQYAyABKAlCEwoRX2V4cGVjdGVkX3ZlcnNpb24iZAoOUmVzaWduUmVzcG9uc2USDwoHdmVyc2lvbhgBIAEoBBIfCgZldmVudHMYAiADKAsyDy5ydW1teS52MS5FdmVudBIgCgR2aWV3GAMgASgLMhIucnVtbXkudjEuR2FtZVZpZXcieAoTVmFsaWRhdGVNb3ZlUmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhwKBG1vdmUYAiABKAsyDi5ydW1teS52MS5Nb3ZlEh0KEGV4cGVjdGVkX3ZlcnNpb24YAyABKARIAIgBAUITChFfZXhwZWN0ZWRfdmVyc2lvbiInChRWYWxpZGF0ZU1vdmVSZXNwb25zZRIPCgd2ZXJzaW9uGAEgASgEInsKEFdhdGNoR2FtZVJlcXVlc3QSDwoHZ2FtZV9pZBgBIAEoCRIaCg1hZnRlcl92ZXJzaW9uGAIgASgESACIAQESGAoLYWZ0ZXJfaW5kZXgYAyABKA1IAYgBAUIQCg5fYWZ0ZXJfdmVyc2lvbkIOCgxfYWZ0ZXJfaW5kZXgiZwoRV2F0Y2hHYW1lUmVzcG9uc2USJgoIc25hcHNob3QYASABKAsyEi5ydW1teS52MS5HYW1lVmlld0gAEiAKBWV2ZW50GAIgASgLMg8ucnVtbXkudjEuRXZlbnRIAEIICgZ1cGRhdGUiZQoQR2V0UmVwbGF5UmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhoKDWFmdGVyX3ZlcnNpb24YAiABKARIAIgBARISCgptYXhfZXZlbnRzGAMgASgNQhAKDl9hZnRlcl92ZXJzaW9uIuABChFHZXRSZXBsYXlSZXNwb25zZRIoCghzZXR0aW5ncxgBIAEoCzIWLnJ1bW15LnYxLkdhbWVTZXR0aW5ncxIjCgdpbml0aWFsGAIgASgLMhIucnVtbXkudjEuR2FtZVZpZXcSHwoGZXZlbnRzGAMgAygLMg8ucnVtbXkudjEuRXZlbnQSIwoHY3VycmVudBgEIAEoCzISLnJ1bW15LnYxLkdhbWVWaWV3Eh8KEm5leHRfYWZ0ZXJfdmVyc2lvbhgFIAEoBEgAiAEBQhUKE19uZXh0X2FmdGVyX3ZlcnNpb24itwEKEkFuYWx5emVIYW5kUmVxdWVzdBINCgVjYXJkcxgBIAMoCRIPCgdwcm9maWxlGAIgASgJEjoKB29wdGlvbnMYAyADKAsyKS5ydW1teS52MS5BbmFseXplSGFuZFJlcXVlc3QuT3B0aW9uc0VudHJ5GkUKDE9wdGlvbnNFbnRyeRILCgNrZXkYASABKAkSJAoFdmFsdWUYAiABKAsyFS5ydW1teS52MS5PcHRpb25WYWx1ZToCOAEiRQoLQXJyYW5nZW1lbnQSHgoFbWVsZHMYASADKAsyDy5ydW1teS52MS5DYXJkcxIWCg5kZWFkd29vZF9jYXJkcxgCIAMoCSIuCgxLbm9ja0Rpc2NhcmQSDAoEY2FyZBgBIAEoCRIQCghkZWFkd29vZBgCIAEoBSKoAQoTQW5hbHl6ZUhhbmRSZXNwb25zZRIUCgxtaW5fZGVhZHdvb2QYASABKAUSKwoMYXJyYW5nZW1lbnRzGAIgAygLMhUucnVtbXkudjEuQXJyYW5nZW1lbnQSHgoWYXJyYW5nZW1lbnRzX3RydW5jYXRlZBgDIAEoCBIuCg5rbm9ja19kaXNjYXJkcxgEIAMoCzIWLnJ1bW15LnYxLktub2NrRGlzY2FyZCINCgtQaW5nUmVxdWVzdCIOCgxQaW5nUmVzcG9uc2Uy1gUKDlJlZmVyZWVTZXJ2aWNlEkcKCkNyZWF0ZUdhbWUSGy5ydW1teS52MS5DcmVhdGVHYW1lUmVxdWVzdBocLnJ1bW15LnYxLkNyZWF0ZUdhbWVSZXNwb25zZRJBCghKb2luR2FtZRIZLnJ1bW15LnYxLkpvaW5HYW1lUmVxdWVzdBoaLnJ1bW15LnYxLkpvaW5HYW1lUmVzcG9uc2USQwoHR2V0R2FtZRIYLnJ1bW15LnYxLkdldEdhbWVSZXF1ZXN0GhkucnVtbXkudjEuR2V0R2FtZVJlc3BvbnNlIgOQAgESRwoKU3VibWl0TW92ZRIbLnJ1bW15LnYxLlN1Ym1pdE1vdmVSZXF1ZXN0GhwucnVtbXkudjEuU3VibWl0TW92ZVJlc3BvbnNlEjsKBlJlc2lnbhIXLnJ1bW15LnYxLlJlc2lnblJlcXVlc3QaGC5ydW1teS52MS5SZXNpZ25SZXNwb25zZRJNCgxWYWxpZGF0ZU1vdmUSHS5ydW1teS52MS5WYWxpZGF0ZU1vdmVSZXF1ZXN0Gh4ucnVtbXkudjEuVmFsaWRhdGVNb3ZlUmVzcG9uc2USRgoJV2F0Y2hHYW1lEhoucnVtbXkudjEuV2F0Y2hHYW1lUmVxdWVzdBobLnJ1bW15LnYxLldhdGNoR2FtZVJlc3BvbnNlMAESSQoJR2V0UmVwbGF5EhoucnVtbXkudjEuR2V0UmVwbGF5UmVxdWVzdBobLnJ1bW15LnYxLkdldFJlcGxheVJlc3BvbnNlIgOQAgESTwoLQW5hbHl6ZUhhbmQSHC5ydW1teS52MS5BbmFseXplSGFuZFJlcXVlc3QaHS5ydW1teS52MS5BbmFseXplSGFuZFJlc3BvbnNlIgOQAgESOgoEUGluZxIVLnJ1bW15LnYxLlBpbmdSZXF1ZXN0GhYucnVtbXkudjEuUGluZ1Jlc3BvbnNlIgOQAgFiBnByb3RvMw", [file_rummy_v1_game]);
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
function auth(token2, extra = {}) {
  return { ...extra, headers: { authorization: `Bearer ${token2}` } };
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
async function* watchGame(client, gameId2, token2, opts = {}) {
  let pos = opts.after;
  let failures = 0;
  for (; ; ) {
    try {
      const req = pos === void 0 ? { gameId: gameId2 } : { gameId: gameId2, afterVersion: pos.version, afterIndex: pos.index };
      for await (const update of client.watchGame(req, auth(token2, { signal: opts.signal, onHeader: () => opts.onOpen?.() }))) {
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

// src/node.ts
function pem(value2) {
  return value2 === void 0 || value2.includes("-----BEGIN ") ? value2 : readFileSync(value2, "utf8");
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

// src/strategy.ts
var RANKS = "A23456789TJQK";
function rank(card) {
  return RANKS.indexOf(card[0]) + 1;
}
function value(card) {
  return Math.min(rank(card), 10);
}
function fit(card, hand) {
  let score = 0;
  for (const other of hand) {
    if (other === card) continue;
    if (other[0] === card[0]) score += 2;
    else if (other[1] === card[1] && Math.abs(rank(other) - rank(card)) <= 2) score += 1;
  }
  return score;
}
function chooseMove(view2) {
  const moves = view2.legalMoves;
  if (moves.length === 0) throw new Error("no legal move");
  const of = (kind) => moves.filter((m) => m.move.case === kind);
  const pick = of("bigGin")[0] ?? of("declare").find((m) => m.move.case === "declare" && m.move.value.best);
  if (pick) return pick;
  const knocks = of("knock");
  if (knocks.length > 0) return knocks[0];
  const melds = of("meld");
  if (melds.length > 0 && view2.game === 2) {
    return melds.reduce((a, b) => a.move.value.cards.length >= b.move.value.cards.length ? a : b);
  }
  const layoffs = of("layOff");
  if (layoffs.length > 0 && view2.game === 2) return layoffs[0];
  const drawDiscard = of("drawDiscard")[0];
  const top = view2.discardPile[view2.discardPile.length - 1];
  if (drawDiscard && top && (fit(top, view2.hand) >= 2 || of("drawStock").length === 0)) return drawDiscard;
  const draw = of("drawStock")[0] ?? of("passTurn")[0];
  if (draw) return draw;
  const discards = of("discard");
  if (discards.length > 0) {
    const score = (m) => {
      const card = m.move.value.card;
      return fit(card, view2.hand) * 20 - value(card);
    };
    return discards.reduce((a, b) => score(b) < score(a) ? b : a);
  }
  return moves[0];
}

// src/bot.ts
var { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://localhost:8080" },
    game: { type: "string" },
    token: { type: "string" },
    quiet: { type: "boolean", default: false }
  }
});
if (!values.game || !values.token) {
  console.error("usage: node dist/bot.mjs --url http://localhost:8080 --game GAME_ID --token SEAT_TOKEN");
  process.exit(2);
}
var gameId = values.game;
var token = values.token;
var referee = connectReferee(values.url);
var say = (text) => {
  if (!values.quiet) console.log(text);
};
async function playWhileMyTurn() {
  let { view: view2 } = await referee.getGame({ gameId }, auth(token));
  while (view2 && view2.toAct === view2.viewerSeat && view2.legalMoves.length > 0) {
    const m = chooseMove(view2);
    try {
      const answer = await referee.submitMove(
        { gameId, move: m, expectedVersion: view2.version, requestId: `bot-${view2.viewerSeat}-${view2.version}` },
        auth(token)
      );
      say(`seat ${view2.viewerSeat}: ${moveText(m)}`);
      view2 = answer.view;
    } catch (err) {
      const r = refusal(err);
      if (r.code !== "Aborted" && r.reason !== "OUT_OF_TIME") throw err;
      view2 = (await referee.getGame({ gameId }, auth(token))).view;
    }
  }
  return view2;
}
var last = await playWhileMyTurn();
for await (const update of watchGame(referee, gameId, token, {
  onCut: (err, n) => say(`stream cut (${refusal(err).code}), resuming (attempt ${n})`)
})) {
  if (update.update.case === "event" && update.update.value.kind === "match_ended") break;
  if (update.update.case === "event" && last && update.update.value.version <= last.version) continue;
  last = await playWhileMyTurn();
}
var { view } = await referee.getGame({ gameId }, auth(token));
var totals = view?.result?.totals ?? [];
console.log(JSON.stringify({ seat: view?.viewerSeat, totals, winners: view?.result?.winners ?? [] }));
