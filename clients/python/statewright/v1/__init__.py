"""Generated protobuf and gRPC stubs for the statewright.v1 API. Do not edit."""
