"""The configuration wing: stream and consumer configurations as the API speaks them (Go
structs, strict decoding, defaults, validation in nats-server's order, JSON encoding)."""
