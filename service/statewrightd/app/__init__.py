"""The application core: one implementation of every use case, called by every door.

``wiring`` opens the parts of a server process (store, definitions, EventLoop, runtime,
schedulers) and closes them; the use cases are grouped by family: ``workflows`` (step,
delete, watch), ``reads``, ``tasks`` (what workers ask) and ``diagnostics``. The gRPC
servicers and the HTTP API only convert requests and answers around them.
"""
