package dev.statewright.client;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A bearer token a {@link TokenProvider} hands out, and how long the client may reuse it. Its
 * {@link #toString()} never shows the value, so it is safe to log.
 */
public final class BearerToken {
  // A header value gRPC can carry as is: visible ASCII, no spaces (no header injection either).
  private static final Pattern VALID = Pattern.compile("[\\x21-\\x7e]+");

  private final String value;
  private final Instant expiresAt;

  private BearerToken(String value, Instant expiresAt) {
    Objects.requireNonNull(value, "value");
    if (!VALID.matcher(value).matches()) {
      throw new IllegalArgumentException("a bearer token must be non-empty visible ASCII without spaces");
    }
    this.value = value;
    this.expiresAt = expiresAt;
  }

  /** A token for one call: the provider is asked again before the next one. */
  public static BearerToken of(String value) {
    return new BearerToken(value, null);
  }

  /**
   * A token the client reuses until shortly before {@code expiresAt} (30 s before it, or half its
   * remaining life if that is shorter), then asks the provider for a new one.
   */
  public static BearerToken expiringAt(String value, Instant expiresAt) {
    return new BearerToken(value, Objects.requireNonNull(expiresAt, "expiresAt"));
  }

  /** The token itself, as sent after {@code Bearer }. */
  public String value() {
    return value;
  }

  /** When it expires; empty for a one-call token. */
  public Optional<Instant> expiresAt() {
    return Optional.ofNullable(expiresAt);
  }

  @Override
  public String toString() {
    return "BearerToken[" + (expiresAt == null ? "one call" : "expires " + expiresAt) + "]";
  }
}
