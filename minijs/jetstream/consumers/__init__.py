"""The consumer wing: a consumer and its parts (pending counts, pull requests, push delivery,
acks and redelivery, priority groups, durable state), each owning its own state behind the
interface it declares; and the create sequence the API plans with."""
