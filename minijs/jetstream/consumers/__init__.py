"""The consumer wing: a consumer and its parts (pull requests, push delivery, acks and
redelivery, priority groups, durable state), each owning its own state."""
