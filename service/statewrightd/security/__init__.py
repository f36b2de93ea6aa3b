"""Who may call what: TLS, authentication of callers, roles, scopes and per-caller limits."""
