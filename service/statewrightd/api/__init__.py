"""The gRPC surface: request validation, conversion, error mapping and the servicer."""
