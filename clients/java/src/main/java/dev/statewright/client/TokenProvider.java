package dev.statewright.client;

/**
 * Where a client gets the bearer token it sends as {@code authorization: Bearer <token>} on every
 * call: for tokens that change (short-lived JWTs from an identity provider, a file a sidecar
 * rewrites).
 *
 * <p>The client asks it for a token before a call when it holds none that is still good: a {@link
 * BearerToken#of} token is used for one call only, so the provider is asked before every call; a
 * {@link BearerToken#expiringAt} token is reused until shortly before it expires. A call the server
 * answers with UNAUTHENTICATED drops the token held, so the next call asks again.
 *
 * <pre>{@code
 * StatewrightClient client = StatewrightClient.builder("statewright.example.com:443")
 *     .tls(true)
 *     .tokenProvider(() -> {
 *       AccessToken t = identityProvider.clientCredentials();   // your OAuth client
 *       return BearerToken.expiringAt(t.value(), t.expiresAt());
 *     })
 *     .build();
 * }</pre>
 *
 * <p>It is called on gRPC's application threads (never a transport thread), at most once at a
 * time per client, so it may block on I/O. An exception it throws fails the call with {@link
 * UnauthenticatedException} (the cause is kept; nothing of the token is put in messages).
 */
@FunctionalInterface
public interface TokenProvider {
  BearerToken token() throws Exception;
}
