"""The protocol's messages, one module per subject; :mod:`azsd.ipc.protocol` assembles them."""
