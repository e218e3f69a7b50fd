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
var file_rummy_v1_game = /* @__PURE__ */ fileDesc("ChNydW1teS92MS9nYW1lLnByb3RvEghydW1teS52MSJZCgtPcHRpb25WYWx1ZRIUCgpib29sX3ZhbHVlGAEgASgISAASEwoJaW50X3ZhbHVlGAIgASgDSAASFgoMc3RyaW5nX3ZhbHVlGAMgASgJSABCBwoFdmFsdWUiFgoFQ2FyZHMSDQoFY2FyZHMYASADKAkiJwoFTWVsZHMSHgoFbWVsZHMYASADKAsyDy5ydW1teS52MS5DYXJkcyKIBgoETW92ZRIuCgpkcmF3X3N0b2NrGAEgASgLMhgucnVtbXkudjEuTW92ZS5EcmF3U3RvY2tIABIyCgxkcmF3X2Rpc2NhcmQYAiABKAsyGi5ydW1teS52MS5Nb3ZlLkRyYXdEaXNjYXJkSAASLAoJcGFzc190dXJuGAMgASgLMhcucnVtbXkudjEuTW92ZS5QYXNzVHVybkgAEikKB2Rpc2NhcmQYBCABKAsyFi5ydW1teS52MS5Nb3ZlLkRpc2NhcmRIABIlCgVrbm9jaxgFIAEoCzIULnJ1bW15LnYxLk1vdmUuS25vY2tIABIoCgdiaWdfZ2luGAYgASgLMhUucnVtbXkudjEuTW92ZS5CaWdHaW5IABIjCgRtZWxkGAcgASgLMhMucnVtbXkudjEuTW92ZS5NZWxkSAASKAoHbGF5X29mZhgIIAEoCzIVLnJ1bW15LnYxLk1vdmUuTGF5T2ZmSAASKQoHZGVjbGFyZRgJIAEoCzIWLnJ1bW15LnYxLk1vdmUuRGVjbGFyZUgAEiMKBGRvbmUYCiABKAsyEy5ydW1teS52MS5Nb3ZlLkRvbmVIABoLCglEcmF3U3RvY2saDQoLRHJhd0Rpc2NhcmQaCgoIUGFzc1R1cm4aFwoHRGlzY2FyZBIMCgRjYXJkGAEgASgJGjgKBUtub2NrEg8KB2Rpc2NhcmQYASABKAkSHgoFbWVsZHMYAiABKAsyDy5ydW1teS52MS5NZWxkcxooCgZCaWdHaW4SHgoFbWVsZHMYASABKAsyDy5ydW1teS52MS5NZWxkcxoVCgRNZWxkEg0KBWNhcmRzGAEgAygJGicKBkxheU9mZhIMCgRjYXJkGAEgASgJEg8KB21lbGRfaWQYAiABKAUaXgoHRGVjbGFyZRIeCgVtZWxkcxgBIAMoCzIPLnJ1bW15LnYxLkNhcmRzEiUKB2xheW9mZnMYAiADKAsyFC5ydW1teS52MS5MYXlPZmZDYXJkEgwKBGJlc3QYAyABKAgaBgoERG9uZUIGCgRtb3ZlIisKCkxheU9mZkNhcmQSDAoEY2FyZBgBIAEoCRIPCgdtZWxkX2lkGAIgASgFIiUKB0xhaWRPZmYSDAoEY2FyZBgBIAEoCRIMCgRzZWF0GAIgASgFInsKCVRhYmxlTWVsZBIKCgJpZBgBIAEoBRINCgVvd25lchgCIAEoBRIgCgRraW5kGAMgASgOMhIucnVtbXkudjEuTWVsZEtpbmQSDQoFY2FyZHMYBCADKAkSIgoHbGF5b2ZmcxgFIAMoCzIRLnJ1bW15LnYxLkxhaWRPZmYi1wEKCFNlYXRWaWV3EgwKBHNlYXQYASABKAUSFAoMZGlzcGxheV9uYW1lGAIgASgJEiAKBGtpbmQYAyABKA4yEi5ydW1teS52MS5TZWF0S2luZBIMCgRvcGVuGAQgASgIEhEKCWhhbmRfc2l6ZRgFIAEoBRITCgtrbm93bl9jYXJkcxgGIAMoCRINCgVzY29yZRgHIAEoBRINCgVib3hlcxgIIAEoBRIYChBob2xseXdvb2Rfc2NvcmVzGAkgAygFEhcKD2hvbGx5d29vZF9ib3hlcxgKIAMoBSJGCglLbm9ja0luZm8SDwoHa25vY2tlchgBIAEoBRIQCghkZWFkd29vZBgCIAEoBRIWCg5kZWFkd29vZF9jYXJkcxgDIAMoCSK6BAoKSGFuZFJlc3VsdBITCgtoYW5kX251bWJlchgBIAEoBRIOCgZyZWFzb24YAiABKAkSEwoGd2lubmVyGAMgASgFSACIAQESDgoGcG9pbnRzGAQgASgFEh4KBWhhbmRzGAUgAygLMg8ucnVtbXkudjEuQ2FyZHMSEwoLaGFuZF92YWx1ZXMYBiADKAUSDgoGc2NvcmVzGAcgAygFEhQKB2tub2NrZXIYCCABKAVIAYgBARIdChBrbm9ja2VyX2RlYWR3b29kGAkgASgFSAKIAQESHgoRZGVmZW5kZXJfZGVhZHdvb2QYCiABKAVIA4gBARIYCgtnb2luZ19ydW1teRgLIAEoCEgEiAEBEigKB2RldGFpbHMYDCABKAsyFy5nb29nbGUucHJvdG9idWYuU3RydWN0EiIKBW1lbGRzGA0gAygLMhMucnVtbXkudjEuVGFibGVNZWxkEioKCWhvbGx5d29vZBgOIAEoCzIXLnJ1bW15LnYxLkhvbGx5d29vZEhhbmQSGgoNcmVzaWduZWRfc2VhdBgPIAEoBUgFiAEBEh4KEWxvc3Rfb25fdGltZV9zZWF0GBAgASgFSAaIAQFCCQoHX3dpbm5lckIKCghfa25vY2tlckITChFfa25vY2tlcl9kZWFkd29vZEIUChJfZGVmZW5kZXJfZGVhZHdvb2RCDgoMX2dvaW5nX3J1bW15QhAKDl9yZXNpZ25lZF9zZWF0QhQKEl9sb3N0X29uX3RpbWVfc2VhdCJLCg1Ib2xseXdvb2RIYW5kEhUKDWdhbWVzX2VudGVyZWQYASADKAUSIwoFZ2FtZXMYAiADKAsyFC5ydW1teS52MS5TZWF0UG9pbnRzIhwKClNlYXRQb2ludHMSDgoGcG9pbnRzGAEgAygFIncKDlNjb3JlQnJlYWtkb3duEg4KBnBvaW50cxgBIAMoBRINCgVib3hlcxgCIAMoBRIRCglib3hfYm9udXMYAyADKAUSEgoKZ2FtZV9ib251cxgEIAMoBRIOCgZ0b3RhbHMYBSADKAUSDwoHd2lubmVycxgGIAMoBSLlAgoLTWF0Y2hSZXN1bHQSDgoGdG90YWxzGAEgAygFEg8KB3dpbm5lcnMYAiADKAUSKAoHZGV0YWlscxgDIAEoCzIXLmdvb2dsZS5wcm90b2J1Zi5TdHJ1Y3QSIQoFZW5kZWQYBCABKA4yEi5ydW1teS52MS5NYXRjaEVuZBIkCglzZWF0X2VuZHMYBSADKA4yES5ydW1teS52MS5TZWF0RW5kEhoKDXJlc2lnbmVkX3NlYXQYBiABKAVIAIgBARIrCglicmVha2Rvd24YByABKAsyGC5ydW1teS52MS5TY29yZUJyZWFrZG93bhIxCg9ob2xseXdvb2RfZ2FtZXMYCCADKAsyGC5ydW1teS52MS5TY29yZUJyZWFrZG93bhIeChFsb3N0X29uX3RpbWVfc2VhdBgJIAEoBUgBiAEBQhAKDl9yZXNpZ25lZF9zZWF0QhQKEl9sb3N0X29uX3RpbWVfc2VhdCLOBgoIR2FtZVZpZXcSDwoHZ2FtZV9pZBgBIAEoCRIPCgd2ZXJzaW9uGAIgASgEEiMKC3ZpZXdlcl9yb2xlGAMgASgOMg4ucnVtbXkudjEuUm9sZRIYCgt2aWV3ZXJfc2VhdBgEIAEoBUgAiAEBEiAKBGdhbWUYBSABKA4yEi5ydW1teS52MS5HYW1lS2luZBIeCgVwaGFzZRgGIAEoDjIPLnJ1bW15LnYxLlBoYXNlEhMKBnRvX2FjdBgHIAEoBUgBiAEBEg4KBmRlYWxlchgIIAEoBRITCgtoYW5kX251bWJlchgJIAEoBRIhCgVzZWF0cxgKIAMoCzISLnJ1bW15LnYxLlNlYXRWaWV3EgwKBGhhbmQYCyADKAkSIgoFbWVsZHMYDCADKAsyEy5ydW1teS52MS5UYWJsZU1lbGQSFAoMZGlzY2FyZF9waWxlGA0gAygJEhIKCnN0b2NrX3NpemUYDiABKAUSFwoKdGFrZW5fY2FyZBgPIAEoCUgCiAEBEg0KBXR1cm5zGBAgASgFEhQKDGhhbmRzX3BsYXllZBgRIAEoBRITCgZ1cGNhcmQYEiABKAlIA4gBARIYCgtrbm9ja19saW1pdBgTIAEoBUgEiAEBEiIKBWtub2NrGBQgASgLMhMucnVtbXkudjEuS25vY2tJbmZvEicKCWxhc3RfaGFuZBgVIAEoCzIULnJ1bW15LnYxLkhhbmRSZXN1bHQSJQoGcmVzdWx0GBYgASgLMhUucnVtbXkudjEuTWF0Y2hSZXN1bHQSIwoLbGVnYWxfbW92ZXMYFyADKAsyDi5ydW1teS52MS5Nb3ZlEh0KFWhvbGx5d29vZF9nYW1lc19lbmRlZBgYIAMoCBIeCgVoYW5kcxgZIAMoCzIPLnJ1bW15LnYxLkNhcmRzEg0KBXN0b2NrGBogAygJEiMKBmNsb2NrcxgbIAMoCzITLnJ1bW15LnYxLlNlYXRDbG9jaxIYCgtkZWFkbGluZV9tcxgcIAEoA0gFiAEBQg4KDF92aWV3ZXJfc2VhdEIJCgdfdG9fYWN0Qg0KC190YWtlbl9jYXJkQgkKB191cGNhcmRCDgoMX2tub2NrX2xpbWl0Qg4KDF9kZWFkbGluZV9tcyK+EgoFRXZlbnQSDwoHdmVyc2lvbhgBIAEoBBINCgVpbmRleBgCIAEoDRIMCgRraW5kGAMgASgJEhEKBHNlYXQYBCABKAVIAYgBARIlCgRkYXRhGAUgASgLMhcuZ29vZ2xlLnByb3RvYnVmLlN0cnVjdBIjCgZjbG9ja3MYBiADKAsyEy5ydW1teS52MS5TZWF0Q2xvY2sSGAoLZGVhZGxpbmVfbXMYByABKANIAogBARIzCgxoYW5kX3N0YXJ0ZWQYCiABKAsyGy5ydW1teS52MS5FdmVudC5IYW5kU3RhcnRlZEgAEiYKBWRlYWx0GAsgASgLMhUucnVtbXkudjEuRXZlbnQuRGVhbHRIABIkCgRkcmV3GAwgASgLMhQucnVtbXkudjEuRXZlbnQuRHJld0gAEigKBnBhc3NlZBgNIAEoCzIWLnJ1bW15LnYxLkV2ZW50LlBhc3NlZEgAEi4KCWRpc2NhcmRlZBgOIAEoCzIZLnJ1bW15LnYxLkV2ZW50LkRpc2NhcmRlZEgAEioKB2tub2NrZWQYDyABKAsyFy5ydW1teS52MS5FdmVudC5Lbm9ja2VkSAASKQoHYmlnX2dpbhgQIAEoCzIWLnJ1bW15LnYxLkV2ZW50LkJpZ0dpbkgAEigKBm1lbGRlZBgRIAEoCzIWLnJ1bW15LnYxLkV2ZW50Lk1lbGRlZEgAEisKCGxhaWRfb2ZmGBIgASgLMhcucnVtbXkudjEuRXZlbnQuTGFpZE9mZkgAEiwKCGRlY2xhcmVkGBMgASgLMhgucnVtbXkudjEuRXZlbnQuRGVjbGFyZWRIABIuCglyZXN0b2NrZWQYFCABKAsyGS5ydW1teS52MS5FdmVudC5SZXN0b2NrZWRIABIsCghyZXNpZ25lZBgVIAEoCzIYLnJ1bW15LnYxLkV2ZW50LlJlc2lnbmVkSAASLwoKaGFuZF9lbmRlZBgWIAEoCzIZLnJ1bW15LnYxLkV2ZW50LkhhbmRFbmRlZEgAEjEKC21hdGNoX2VuZGVkGBcgASgLMhoucnVtbXkudjEuRXZlbnQuTWF0Y2hFbmRlZEgAEjUKDWNsb2NrX3N0b3BwZWQYGCABKAsyHC5ydW1teS52MS5FdmVudC5DbG9ja1N0b3BwZWRIABI1Cg1jbG9ja19zdGFydGVkGBkgASgLMhwucnVtbXkudjEuRXZlbnQuQ2xvY2tTdGFydGVkSAASLQoJdGltZWRfb3V0GBogASgLMhgucnVtbXkudjEuRXZlbnQuVGltZWRPdXRIABIvCgphdXRvX21vdmVkGBsgASgLMhkucnVtbXkudjEuRXZlbnQuQXV0b01vdmVkSAASMwoMZ2FtZV9leHBpcmVkGBwgASgLMhsucnVtbXkudjEuRXZlbnQuR2FtZUV4cGlyZWRIABI3Cg5nYW1lX2FiYW5kb25lZBgdIAEoCzIdLnJ1bW15LnYxLkV2ZW50LkdhbWVBYmFuZG9uZWRIABqLAQoLSGFuZFN0YXJ0ZWQSDwoHaGFuZF9ubxgBIAEoBRIOCgZkZWFsZXIYAiABKAUSDgoGdXBjYXJkGAMgASgJEhIKCnN0b2NrX3NpemUYBCABKAUSEgoKaGFuZF9zaXplcxgFIAMoBRITCgtrbm9ja19saW1pdBgGIAEoBRIOCgZ0b19hY3QYByABKAUaJQoFRGVhbHQSDQoFY291bnQYASABKAUSDQoFY2FyZHMYAiADKAkaWgoERHJldxIOCgZzb3VyY2UYASABKAkSFwoKc3RvY2tfc2l6ZRgCIAEoBUgAiAEBEhEKBGNhcmQYAyABKAlIAYgBAUINCgtfc3RvY2tfc2l6ZUIHCgVfY2FyZBoWCgZQYXNzZWQSDAoEY2FyZBgBIAEoCRoZCglEaXNjYXJkZWQSDAoEY2FyZBgBIAEoCRp1CgdLbm9ja2VkEg8KB2Rpc2NhcmQYASABKAkSCwoDZ2luGAIgASgIEhAKCGRlYWR3b29kGAMgASgFEiIKBW1lbGRzGAQgAygLMhMucnVtbXkudjEuVGFibGVNZWxkEhYKDmRlYWR3b29kX2NhcmRzGAUgAygJGj4KBkJpZ0dpbhIQCghkZWFkd29vZBgBIAEoBRIiCgVtZWxkcxgCIAMoCzITLnJ1bW15LnYxLlRhYmxlTWVsZBo8CgZNZWxkZWQSIQoEbWVsZBgBIAEoCzITLnJ1bW15LnYxLlRhYmxlTWVsZBIPCgdtZWxkX2lkGAIgASgFGigKB0xhaWRPZmYSDAoEY2FyZBgBIAEoCRIPCgdtZWxkX2lkGAIgASgFGhwKCERlY2xhcmVkEhAKCGRlYWR3b29kGAEgASgFGk0KCVJlc3RvY2tlZBISCgpzdG9ja19zaXplGAEgASgFEgwKBG1vZGUYAiABKAkSHgoFc3RvY2sYAyABKAsyDy5ydW1teS52MS5DYXJkcxo7CghSZXNpZ25lZBIPCgdoYW5kX25vGAEgASgFEh4KBXBoYXNlGAIgASgOMg8ucnVtbXkudjEuUGhhc2UaMQoJSGFuZEVuZGVkEiQKBnJlc3VsdBgBIAEoCzIULnJ1bW15LnYxLkhhbmRSZXN1bHQaMwoKTWF0Y2hFbmRlZBIlCgZyZXN1bHQYASABKAsyFS5ydW1teS52MS5NYXRjaFJlc3VsdBpFCgxDbG9ja1N0b3BwZWQSEAoIc3BlbnRfbXMYASABKAMSFAoMcmVtYWluaW5nX21zGAIgASgDEg0KBWF0X21zGAMgASgDGjgKDENsb2NrU3RhcnRlZBISCgpzdGFydGVkX21zGAEgASgDEhQKDHJlbWFpbmluZ19tcxgCIAEoAxpeCghUaW1lZE91dBIsCgZwb2xpY3kYASABKA4yHC5ydW1teS52MS5UaW1lb3V0UG9saWN5LktpbmQSEwoLZGVhZGxpbmVfbXMYAiABKAMSDwoHZm9yZmVpdBgDIAEoCBo9CglBdXRvTW92ZWQSHAoEbW92ZRgBIAEoCzIOLnJ1bW15LnYxLk1vdmUSEgoKYXV0b19tb3ZlcxgCIAEoBRoNCgtHYW1lRXhwaXJlZBoPCg1HYW1lQWJhbmRvbmVkQgkKB3BheWxvYWRCBwoFX3NlYXRCDgoMX2RlYWRsaW5lX21zIqECCgtUaW1lQ29udHJvbBIxCghwZXJfbW92ZRgBIAEoCzIdLnJ1bW15LnYxLlRpbWVDb250cm9sLlBlck1vdmVIABIsCgVjbG9jaxgCIAEoCzIbLnJ1bW15LnYxLlRpbWVDb250cm9sLkNsb2NrSAASKgoEYmFuaxgDIAEoCzIaLnJ1bW15LnYxLlRpbWVDb250cm9sLkJhbmtIABobCgdQZXJNb3ZlEhAKCGxpbWl0X21zGAEgASgDGjEKBUNsb2NrEhIKCmluaXRpYWxfbXMYASABKAMSFAoMaW5jcmVtZW50X21zGAIgASgDGi0KBEJhbmsSFAoMYWxsb3dhbmNlX21zGAEgASgDEg8KB2JhbmtfbXMYAiABKANCBgoEa2luZCKdAQoNVGltZW91dFBvbGljeRIqCgRraW5kGAEgASgOMhwucnVtbXkudjEuVGltZW91dFBvbGljeS5LaW5kEhYKDm1heF9hdXRvX21vdmVzGAIgASgFIkgKBEtpbmQSFAoQS0lORF9VTlNQRUNJRklFRBAAEhYKEktJTkRfRk9SRkVJVF9NQVRDSBABEhIKDktJTkRfQVVUT19NT1ZFEAIipgEKCVNlYXRDbG9jaxIMCgRzZWF0GAEgASgFEhQKDHJlbWFpbmluZ19tcxgCIAEoAxIPCgdydW5uaW5nGAMgASgIEhcKCnN0YXJ0ZWRfbXMYBCABKANIAIgBARIYCgtkZWFkbGluZV9tcxgFIAEoA0gBiAEBEhIKCmF1dG9fbW92ZXMYBiABKAVCDQoLX3N0YXJ0ZWRfbXNCDgoMX2RlYWRsaW5lX21zIl0KCFNlYXRTcGVjEhQKDGRpc3BsYXlfbmFtZRgBIAEoCRIgCgRraW5kGAIgASgOMhIucnVtbXkudjEuU2VhdEtpbmQSDAoEb3BlbhgDIAEoCBILCgNib3QYBCABKAki2AMKDEdhbWVTZXR0aW5ncxIPCgdwcm9maWxlGAEgASgJEjQKB29wdGlvbnMYAiADKAsyIy5ydW1teS52MS5HYW1lU2V0dGluZ3MuT3B0aW9uc0VudHJ5EiEKBXNlYXRzGAMgAygLMhIucnVtbXkudjEuU2VhdFNwZWMSGgoSc3BlY3RhdG9yc19hbGxvd2VkGAQgASgIEhcKD29yZ2FuaXplcl9kZWFscxgFIAEoCBIXCg9zZWVkX2NvbW1pdG1lbnQYBiABKAkSDAoEc2VlZBgHIAEoDBIqCgxwcmVzZXRfZGVhbHMYCCADKAsyFC5ydW1teS52MS5QcmVzZXREZWFsEisKDHRpbWVfY29udHJvbBgJIAEoCzIVLnJ1bW15LnYxLlRpbWVDb250cm9sEi8KDnRpbWVvdXRfcG9saWN5GAogASgLMhcucnVtbXkudjEuVGltZW91dFBvbGljeRIxCg9zcGVjdGF0b3JfZGVsYXkYCyABKAsyGC5ydW1teS52MS5TcGVjdGF0b3JEZWxheRpFCgxPcHRpb25zRW50cnkSCwoDa2V5GAEgASgJEiQKBXZhbHVlGAIgASgLMhUucnVtbXkudjEuT3B0aW9uVmFsdWU6AjgBIjcKDlNwZWN0YXRvckRlbGF5Eg0KBW1vdmVzGAEgASgNEhYKDnVudGlsX2hhbmRfZW5kGAIgASgIIlsKClByZXNldERlYWwSDgoGZGVhbGVyGAEgASgFEh4KBWhhbmRzGAIgAygLMg8ucnVtbXkudjEuQ2FyZHMSDgoGdXBjYXJkGAMgASgJEg0KBXN0b2NrGAQgAygJKk0KCEdhbWVLaW5kEhkKFUdBTUVfS0lORF9VTlNQRUNJRklFRBAAEhEKDUdBTUVfS0lORF9HSU4QARITCg9HQU1FX0tJTkRfUlVNTVkQAiqmAQoFUGhhc2USFQoRUEhBU0VfVU5TUEVDSUZJRUQQABIWChJQSEFTRV9UQUtFX09SX1BBU1MQARIOCgpQSEFTRV9EUkFXEAISEQoNUEhBU0VfRElTQ0FSRBADEg4KClBIQVNFX1BMQVkQBBIQCgxQSEFTRV9MQVlPRkYQBRITCg9QSEFTRV9MQVNUX0NBUkQQBhIUChBQSEFTRV9NQVRDSF9PVkVSEAcqUQoEUm9sZRIUChBST0xFX1VOU1BFQ0lGSUVEEAASDQoJUk9MRV9TRUFUEAESEgoOUk9MRV9TUEVDVEFUT1IQAhIQCgxST0xFX1JFRkVSRUUQAypNCghTZWF0S2luZBIZChVTRUFUX0tJTkRfVU5TUEVDSUZJRUQQABITCg9TRUFUX0tJTkRfSFVNQU4QARIRCg1TRUFUX0tJTkRfQk9UEAIqSwoITWVsZEtpbmQSGQoVTUVMRF9LSU5EX1VOU1BFQ0lGSUVEEAASEQoNTUVMRF9LSU5EX1NFVBABEhEKDU1FTERfS0lORF9SVU4QAiqDAQoITWF0Y2hFbmQSGQoVTUFUQ0hfRU5EX1VOU1BFQ0lGSUVEEAASFwoTTUFUQ0hfRU5EX0NPTVBMRVRFRBABEhYKEk1BVENIX0VORF9SRVNJR05FRBACEhIKDk1BVENIX0VORF9USU1FEAMSFwoTTUFUQ0hfRU5EX09SR0FOSVpFUhAEKpEBCgdTZWF0RW5kEhgKFFNFQVRfRU5EX1VOU1BFQ0lGSUVEEAASFQoRU0VBVF9FTkRfRklOSVNIRUQQARIVChFTRUFUX0VORF9SRVNJR05FRBACEhkKFVNFQVRfRU5EX0xPU1RfT05fVElNRRADEiMKH1NFQVRfRU5EX0ZPUkZFSVRFRF9CWV9PUkdBTklaRVIQBGIGcHJvdG8z", [file_google_protobuf_struct]);
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
var HollywoodHandSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 10);
var SeatPointsSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 11);
var ScoreBreakdownSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 12);
var MatchResultSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 13);
var GameViewSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 14);
var EventSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15);
var Event_HandStartedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 0);
var Event_DealtSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 1);
var Event_DrewSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 2);
var Event_PassedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 3);
var Event_DiscardedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 4);
var Event_KnockedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 5);
var Event_BigGinSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 6);
var Event_MeldedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 7);
var Event_LaidOffSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 8);
var Event_DeclaredSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 9);
var Event_RestockedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 10);
var Event_ResignedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 11);
var Event_HandEndedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 12);
var Event_MatchEndedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 13);
var Event_ClockStoppedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 14);
var Event_ClockStartedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 15);
var Event_TimedOutSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 16);
var Event_AutoMovedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 17);
var Event_GameExpiredSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 18);
var Event_GameAbandonedSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 15, 19);
var TimeControlSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 16);
var TimeControl_PerMoveSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 16, 0);
var TimeControl_ClockSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 16, 1);
var TimeControl_BankSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 16, 2);
var TimeoutPolicySchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 17);
var TimeoutPolicy_Kind = /* @__PURE__ */ ((TimeoutPolicy_Kind2) => {
  TimeoutPolicy_Kind2[TimeoutPolicy_Kind2["UNSPECIFIED"] = 0] = "UNSPECIFIED";
  TimeoutPolicy_Kind2[TimeoutPolicy_Kind2["FORFEIT_MATCH"] = 1] = "FORFEIT_MATCH";
  TimeoutPolicy_Kind2[TimeoutPolicy_Kind2["AUTO_MOVE"] = 2] = "AUTO_MOVE";
  return TimeoutPolicy_Kind2;
})(TimeoutPolicy_Kind || {});
var TimeoutPolicy_KindSchema = /* @__PURE__ */ enumDesc(file_rummy_v1_game, 17, 0);
var SeatClockSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 18);
var SeatSpecSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 19);
var GameSettingsSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 20);
var SpectatorDelaySchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 21);
var PresetDealSchema = /* @__PURE__ */ messageDesc(file_rummy_v1_game, 22);
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
var file_rummy_v1_referee = /* @__PURE__ */ fileDesc2("ChZydW1teS92MS9yZWZlcmVlLnByb3RvEghydW1teS52MSLWAwoRQ3JlYXRlR2FtZVJlcXVlc3QSDwoHcHJvZmlsZRgBIAEoCRI5CgdvcHRpb25zGAIgAygLMigucnVtbXkudjEuQ3JlYXRlR2FtZVJlcXVlc3QuT3B0aW9uc0VudHJ5EiEKBXNlYXRzGAMgAygLMhIucnVtbXkudjEuU2VhdFNwZWMSJgoFbWF0Y2gYBCABKAsyFy5ydW1teS52MS5NYXRjaFNldHRpbmdzEhgKEGFsbG93X3NwZWN0YXRvcnMYBSABKAgSKgoMcHJlc2V0X2RlYWxzGAYgAygLMhQucnVtbXkudjEuUHJlc2V0RGVhbBIMCgRzZWVkGAcgASgMEisKDHRpbWVfY29udHJvbBgIIAEoCzIVLnJ1bW15LnYxLlRpbWVDb250cm9sEi8KDnRpbWVvdXRfcG9saWN5GAkgASgLMhcucnVtbXkudjEuVGltZW91dFBvbGljeRIxCg9zcGVjdGF0b3JfZGVsYXkYCiABKAsyGC5ydW1teS52MS5TcGVjdGF0b3JEZWxheRpFCgxPcHRpb25zRW50cnkSCwoDa2V5GAEgASgJEiQKBXZhbHVlGAIgASgLMhUucnVtbXkudjEuT3B0aW9uVmFsdWU6AjgBImEKDU1hdGNoU2V0dGluZ3MSGQoMdGFyZ2V0X3Njb3JlGAEgASgFSACIAQESFgoJbWF4X2hhbmRzGAIgASgFSAGIAQFCDwoNX3RhcmdldF9zY29yZUIMCgpfbWF4X2hhbmRzIigKCVNlYXRUb2tlbhIMCgRzZWF0GAEgASgFEg0KBXRva2VuGAIgASgJIrwBChJDcmVhdGVHYW1lUmVzcG9uc2USDwoHZ2FtZV9pZBgBIAEoCRIoCgtzZWF0X3Rva2VucxgCIAMoCzITLnJ1bW15LnYxLlNlYXRUb2tlbhIXCg9zcGVjdGF0b3JfdG9rZW4YAyABKAkSKAoIc2V0dGluZ3MYBCABKAsyFi5ydW1teS52MS5HYW1lU2V0dGluZ3MSDwoHdmVyc2lvbhgFIAEoBBIXCg9zZWVkX2NvbW1pdG1lbnQYBiABKAkiVAoPSm9pbkdhbWVSZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSEQoEc2VhdBgCIAEoBUgAiAEBEhQKDGRpc3BsYXlfbmFtZRgDIAEoCUIHCgVfc2VhdCIvChBKb2luR2FtZVJlc3BvbnNlEgwKBHNlYXQYASABKAUSDQoFdG9rZW4YAiABKAkiIQoOR2V0R2FtZVJlcXVlc3QSDwoHZ2FtZV9pZBgBIAEoCSJdCg9HZXRHYW1lUmVzcG9uc2USIAoEdmlldxgBIAEoCzISLnJ1bW15LnYxLkdhbWVWaWV3EigKCHNldHRpbmdzGAIgASgLMhYucnVtbXkudjEuR2FtZVNldHRpbmdzIooBChFTdWJtaXRNb3ZlUmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhwKBG1vdmUYAiABKAsyDi5ydW1teS52MS5Nb3ZlEh0KEGV4cGVjdGVkX3ZlcnNpb24YAyABKARIAIgBARISCgpyZXF1ZXN0X2lkGAQgASgJQhMKEV9leHBlY3RlZF92ZXJzaW9uImgKElN1Ym1pdE1vdmVSZXNwb25zZRIPCgd2ZXJzaW9uGAEgASgEEh8KBmV2ZW50cxgCIAMoCzIPLnJ1bW15LnYxLkV2ZW50EiAKBHZpZXcYAyABKAsyEi5ydW1teS52MS5HYW1lVmlldyJoCg1SZXNpZ25SZXF1ZXN0Eg8KB2dhbWVfaWQYASABKAkSHQoQZXhwZWN0ZWRfdmVyc2lvbhgCIAEoBEgAiAEBEhIKCnJlcXVlc3RfaWQYAyABKAlCEwoRX2V4cGVjdGVkX3ZlcnNpb24iZAoOUmVzaWduUmVzcG9uc2USDwoHdmVyc2lvbhgBIAEoBBIfCgZldmVudHMYAiADKAsyDy5ydW1teS52MS5FdmVudBIgCgR2aWV3GAMgASgLMhIucnVtbXkudjEuR2FtZVZpZXcieAoTVmFsaWRhdGVNb3ZlUmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhwKBG1vdmUYAiABKAsyDi5ydW1teS52MS5Nb3ZlEh0KEGV4cGVjdGVkX3ZlcnNpb24YAyABKARIAIgBAUITChFfZXhwZWN0ZWRfdmVyc2lvbiInChRWYWxpZGF0ZU1vdmVSZXNwb25zZRIPCgd2ZXJzaW9uGAEgASgEInsKEFdhdGNoR2FtZVJlcXVlc3QSDwoHZ2FtZV9pZBgBIAEoCRIaCg1hZnRlcl92ZXJzaW9uGAIgASgESACIAQESGAoLYWZ0ZXJfaW5kZXgYAyABKA1IAYgBAUIQCg5fYWZ0ZXJfdmVyc2lvbkIOCgxfYWZ0ZXJfaW5kZXgiZwoRV2F0Y2hHYW1lUmVzcG9uc2USJgoIc25hcHNob3QYASABKAsyEi5ydW1teS52MS5HYW1lVmlld0gAEiAKBWV2ZW50GAIgASgLMg8ucnVtbXkudjEuRXZlbnRIAEIICgZ1cGRhdGUiZQoQR2V0UmVwbGF5UmVxdWVzdBIPCgdnYW1lX2lkGAEgASgJEhoKDWFmdGVyX3ZlcnNpb24YAiABKARIAIgBARISCgptYXhfZXZlbnRzGAMgASgNQhAKDl9hZnRlcl92ZXJzaW9uIuABChFHZXRSZXBsYXlSZXNwb25zZRIoCghzZXR0aW5ncxgBIAEoCzIWLnJ1bW15LnYxLkdhbWVTZXR0aW5ncxIjCgdpbml0aWFsGAIgASgLMhIucnVtbXkudjEuR2FtZVZpZXcSHwoGZXZlbnRzGAMgAygLMg8ucnVtbXkudjEuRXZlbnQSIwoHY3VycmVudBgEIAEoCzISLnJ1bW15LnYxLkdhbWVWaWV3Eh8KEm5leHRfYWZ0ZXJfdmVyc2lvbhgFIAEoBEgAiAEBQhUKE19uZXh0X2FmdGVyX3ZlcnNpb24itwEKEkFuYWx5emVIYW5kUmVxdWVzdBINCgVjYXJkcxgBIAMoCRIPCgdwcm9maWxlGAIgASgJEjoKB29wdGlvbnMYAyADKAsyKS5ydW1teS52MS5BbmFseXplSGFuZFJlcXVlc3QuT3B0aW9uc0VudHJ5GkUKDE9wdGlvbnNFbnRyeRILCgNrZXkYASABKAkSJAoFdmFsdWUYAiABKAsyFS5ydW1teS52MS5PcHRpb25WYWx1ZToCOAEiRQoLQXJyYW5nZW1lbnQSHgoFbWVsZHMYASADKAsyDy5ydW1teS52MS5DYXJkcxIWCg5kZWFkd29vZF9jYXJkcxgCIAMoCSIuCgxLbm9ja0Rpc2NhcmQSDAoEY2FyZBgBIAEoCRIQCghkZWFkd29vZBgCIAEoBSKoAQoTQW5hbHl6ZUhhbmRSZXNwb25zZRIUCgxtaW5fZGVhZHdvb2QYASABKAUSKwoMYXJyYW5nZW1lbnRzGAIgAygLMhUucnVtbXkudjEuQXJyYW5nZW1lbnQSHgoWYXJyYW5nZW1lbnRzX3RydW5jYXRlZBgDIAEoCBIuCg5rbm9ja19kaXNjYXJkcxgEIAMoCzIWLnJ1bW15LnYxLktub2NrRGlzY2FyZCINCgtQaW5nUmVxdWVzdCIOCgxQaW5nUmVzcG9uc2Uy1gUKDlJlZmVyZWVTZXJ2aWNlEkcKCkNyZWF0ZUdhbWUSGy5ydW1teS52MS5DcmVhdGVHYW1lUmVxdWVzdBocLnJ1bW15LnYxLkNyZWF0ZUdhbWVSZXNwb25zZRJBCghKb2luR2FtZRIZLnJ1bW15LnYxLkpvaW5HYW1lUmVxdWVzdBoaLnJ1bW15LnYxLkpvaW5HYW1lUmVzcG9uc2USQwoHR2V0R2FtZRIYLnJ1bW15LnYxLkdldEdhbWVSZXF1ZXN0GhkucnVtbXkudjEuR2V0R2FtZVJlc3BvbnNlIgOQAgESRwoKU3VibWl0TW92ZRIbLnJ1bW15LnYxLlN1Ym1pdE1vdmVSZXF1ZXN0GhwucnVtbXkudjEuU3VibWl0TW92ZVJlc3BvbnNlEjsKBlJlc2lnbhIXLnJ1bW15LnYxLlJlc2lnblJlcXVlc3QaGC5ydW1teS52MS5SZXNpZ25SZXNwb25zZRJNCgxWYWxpZGF0ZU1vdmUSHS5ydW1teS52MS5WYWxpZGF0ZU1vdmVSZXF1ZXN0Gh4ucnVtbXkudjEuVmFsaWRhdGVNb3ZlUmVzcG9uc2USRgoJV2F0Y2hHYW1lEhoucnVtbXkudjEuV2F0Y2hHYW1lUmVxdWVzdBobLnJ1bW15LnYxLldhdGNoR2FtZVJlc3BvbnNlMAESSQoJR2V0UmVwbGF5EhoucnVtbXkudjEuR2V0UmVwbGF5UmVxdWVzdBobLnJ1bW15LnYxLkdldFJlcGxheVJlc3BvbnNlIgOQAgESTwoLQW5hbHl6ZUhhbmQSHC5ydW1teS52MS5BbmFseXplSGFuZFJlcXVlc3QaHS5ydW1teS52MS5BbmFseXplSGFuZFJlc3BvbnNlIgOQAgESOgoEUGluZxIVLnJ1bW15LnYxLlBpbmdSZXF1ZXN0GhYucnVtbXkudjEuUGluZ1Jlc3BvbnNlIgOQAgFiBnByb3RvMw", [file_rummy_v1_game]);
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
var DEFAULT_TIMEOUT_MS = 1e4;
function refereeClient(transport, opts = {}) {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (timeoutMs <= 0) return createClient(RefereeService, transport);
  return createClient(RefereeService, {
    unary: (method, signal, callTimeoutMs, header, input, contextValues) => transport.unary(method, signal, callTimeoutMs ?? timeoutMs, header, input, contextValues),
    stream: (method, signal, callTimeoutMs, header, input, contextValues) => transport.stream(method, signal, callTimeoutMs, header, input, contextValues)
  });
}
var REFUSED = /* @__PURE__ */ new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
function connectionRefused(err) {
  const seen = /* @__PURE__ */ new Set();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if ("code" in e && typeof e.code === "string" && REFUSED.has(e.code)) return true;
  }
  return false;
}
function roundRobin(transports, opts = {}) {
  const skipMs = opts.skipMs ?? 1e3;
  const downUntil = transports.map(() => 0);
  const skips = transports.map(() => 0);
  let next = 0;
  const pick = () => {
    const now = Date.now();
    let best = -1;
    for (let k = 0; k < transports.length; k++) {
      const i = (next + k) % transports.length;
      if (downUntil[i] <= now) {
        best = i;
        break;
      }
      if (best < 0 || downUntil[i] < downUntil[best]) best = i;
    }
    next = best + 1;
    return best;
  };
  const track = (i, call) => call.then(
    (answer) => {
      skips[i] = 0;
      downUntil[i] = 0;
      return answer;
    },
    (err) => {
      if (connectionRefused(err)) {
        downUntil[i] = Date.now() + Math.min(3e4, skipMs * 2 ** skips[i]);
        skips[i] += 1;
      }
      throw err;
    }
  );
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => {
      const i = pick();
      return track(i, transports[i].unary(method, signal, timeoutMs, header, input, contextValues));
    },
    stream: (method, signal, timeoutMs, header, input, contextValues) => {
      const i = pick();
      return track(i, transports[i].stream(method, signal, timeoutMs, header, input, contextValues));
    }
  };
}
async function persist(call, seconds = 60) {
  const until = Date.now() + seconds * 1e3;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const code = ConnectError.from(err).code;
      if (code !== Code.Unavailable && code !== Code.DeadlineExceeded || Date.now() >= until) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1e3, 50 * 2 ** attempt)));
    }
  }
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
  return refereeClient(transports.length === 1 ? transports[0] : roundRobin(transports), opts);
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
  DEFAULT_TIMEOUT_MS,
  EventSchema,
  Event_AutoMovedSchema,
  Event_BigGinSchema,
  Event_ClockStartedSchema,
  Event_ClockStoppedSchema,
  Event_DealtSchema,
  Event_DeclaredSchema,
  Event_DiscardedSchema,
  Event_DrewSchema,
  Event_GameAbandonedSchema,
  Event_GameExpiredSchema,
  Event_HandEndedSchema,
  Event_HandStartedSchema,
  Event_KnockedSchema,
  Event_LaidOffSchema,
  Event_MatchEndedSchema,
  Event_MeldedSchema,
  Event_PassedSchema,
  Event_ResignedSchema,
  Event_RestockedSchema,
  Event_TimedOutSchema,
  GameKind,
  GameKindSchema,
  GameSettingsSchema,
  GameViewSchema,
  GetGameRequestSchema,
  GetGameResponseSchema,
  GetReplayRequestSchema,
  GetReplayResponseSchema,
  HandResultSchema,
  HollywoodHandSchema,
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
  ScoreBreakdownSchema,
  SeatClockSchema,
  SeatEnd,
  SeatEndSchema,
  SeatKind,
  SeatKindSchema,
  SeatPointsSchema,
  SeatSpecSchema,
  SeatTokenSchema,
  SeatViewSchema,
  SpectatorDelaySchema,
  SubmitMoveRequestSchema,
  SubmitMoveResponseSchema,
  TableMeldSchema,
  TimeControlSchema,
  TimeControl_BankSchema,
  TimeControl_ClockSchema,
  TimeControl_PerMoveSchema,
  TimeoutPolicySchema,
  TimeoutPolicy_Kind,
  TimeoutPolicy_KindSchema,
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
  persist,
  refereeClient,
  refusal,
  roundRobin,
  watchGame
};
