package dev.statewright.client;

import io.grpc.Status;
import java.util.Map;

/**
 * UNAUTHENTICATED: the call carried no credentials, or ones the server does not accept (an unknown
 * API key, an expired or forged JWT, a client certificate naming no known identity). Also thrown
 * without reaching the server when the client refuses to send its token (plaintext to a remote
 * address) or its {@link TokenProvider} fails. Retrying with the same credentials does not help.
 */
public final class UnauthenticatedException extends StatewrightException {
  private static final long serialVersionUID = 1L;

  public UnauthenticatedException(String message, String reason, String domain, Map<String, String> metadata, Throwable cause) {
    super(Status.Code.UNAUTHENTICATED, message, reason, domain, metadata, null, cause);
  }
}
