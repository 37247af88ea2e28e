"""The daemon's wire: the protocol's messages, the ZeroMQ transport and the server loop."""
