package dev.statewright.client;

import io.grpc.CallCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * {@code authorization: Bearer <token>} on every call of a channel, as per-call credentials: the
 * interceptor gives each call these credentials (unless the call brings its own), so unary calls,
 * streams and raw stubs on {@link StatewrightClient#channel()} all carry the token.
 *
 * <p>The token is never sent in plaintext to an address off this machine unless that was allowed
 * explicitly: the check runs for every call, on the connection's actual security level, so it
 * holds for channels the client did not build too.
 */
final class BearerAuth extends CallCredentials implements ClientInterceptor {
  static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  /** A token that expires is replaced this long before it does (or at half its life, if sooner). */
  static final Duration REFRESH_MARGIN = Duration.ofSeconds(30);

  private final String fixed;
  private final TokenProvider provider;
  private final boolean plaintextAllowed;
  private final Supplier<Instant> clock;
  // Held while a provider call runs, so concurrent calls wait for one answer.
  private final Object fetching = new Object();
  // Read without the lock: a call with a good token never waits for a fetch.
  private volatile Held held;

  private record Held(String value, Instant reuseUntil) {}

  private BearerAuth(String fixed, TokenProvider provider, boolean plaintextAllowed, Supplier<Instant> clock) {
    this.fixed = fixed;
    this.provider = provider;
    this.plaintextAllowed = plaintextAllowed;
    this.clock = clock;
  }

  /** The same token on every call. */
  static BearerAuth fixed(String token, boolean plaintextAllowed) {
    return new BearerAuth(BearerToken.of(token).value(), null, plaintextAllowed, Instant::now);
  }

  /** Tokens from {@code provider}, reused as each allows. */
  static BearerAuth provided(TokenProvider provider, boolean plaintextAllowed, Supplier<Instant> clock) {
    return new BearerAuth(null, Objects.requireNonNull(provider, "provider"), plaintextAllowed, clock);
  }

  static String plaintextRefusal(String where) {
    return "refusing to send a bearer token in plaintext to " + where
        + ": turn TLS on (tls(true), a CA, or STATEWRIGHT_TLS_CA), or call allowInsecureToken(true)"
        + " if the network between here and the server is trusted";
  }

  // --- CallCredentials -----------------------------------------------------------------------

  @Override
  public void applyRequestMetadata(RequestInfo info, Executor appExecutor, MetadataApplier applier) {
    if (info.getSecurityLevel() != SecurityLevel.PRIVACY_AND_INTEGRITY
        && !plaintextAllowed
        && !Targets.isLoopback(info.getAuthority())) {
      applier.fail(Status.UNAUTHENTICATED.withDescription(plaintextRefusal(info.getAuthority())));
      return;
    }
    String now = fixed != null ? fixed : reusable();
    if (now != null) {
      applier.apply(headers(now));
      return;
    }
    // The provider may block (a token endpoint, a file): never on the transport's thread.
    try {
      appExecutor.execute(() -> {
        String token;
        try {
          token = fetch();
        } catch (Exception e) {
          applier.fail(Status.UNAUTHENTICATED.withDescription("the token provider failed: " + e).withCause(e));
          return;
        }
        applier.apply(headers(token));
      });
    } catch (RejectedExecutionException e) {
      applier.fail(Status.UNAVAILABLE.withDescription("the channel is shutting down").withCause(e));
    }
  }

  private static Metadata headers(String token) {
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + token);
    return headers;
  }

  /** The token held, if it may still be used. */
  private String reusable() {
    Held now = held;
    return now != null && clock.get().isBefore(now.reuseUntil()) ? now.value() : null;
  }

  /** Asks the provider, once for all the calls waiting, unless another call already did. */
  String fetch() throws Exception {
    synchronized (fetching) {
      String now = reusable();
      if (now != null) {
        return now;
      }
      BearerToken token = provider.token();
      if (token == null) {
        throw new IllegalStateException("the token provider returned no token");
      }
      Held next = null;
      if (token.expiresAt().isPresent()) {
        Instant at = clock.get();
        Instant expires = token.expiresAt().get();
        if (at.isBefore(expires)) {
          Duration half = Duration.between(at, expires).dividedBy(2);
          next = new Held(token.value(), expires.minus(half.compareTo(REFRESH_MARGIN) < 0 ? half : REFRESH_MARGIN));
        }
      }
      held = next;
      return token.value();
    }
  }

  /** The server did not accept the token: the next call asks the provider for a new one. */
  void drop() {
    held = null;
  }

  // --- ClientInterceptor ---------------------------------------------------------------------

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    ClientCall<Q, R> call = next.newCall(method, options.getCredentials() == null ? options.withCallCredentials(this) : options);
    if (fixed != null) {
      return call;
    }
    return new SimpleForwardingClientCall<>(call) {
      @Override
      public void start(Listener<R> listener, Metadata headers) {
        super.start(
            new SimpleForwardingClientCallListener<>(listener) {
              @Override
              public void onClose(Status status, Metadata trailers) {
                if (status.getCode() == Status.Code.UNAUTHENTICATED) {
                  drop();
                }
                super.onClose(status, trailers);
              }
            },
            headers);
      }
    };
  }
}
