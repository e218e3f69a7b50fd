"""The referee service: gRPC API, application service, Redis storage and the redis launcher."""
