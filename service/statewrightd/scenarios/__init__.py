"""``statewrightd test``: scenarios run against the server's engine on a virtual clock and an
in-memory store, with no server and no database."""
