package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The builder's options and the environment, checked without a server: nothing here connects. */
class ClientOptionsTest {
  @TempDir Path dir;

  private static Map<String, String> env(String... pairs) {
    Map<String, String> env = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      env.put(pairs[i], pairs[i + 1]);
    }
    return env;
  }

  private Path file(String name, byte[] content) throws Exception {
    return Files.write(dir.resolve(name), content);
  }

  @Test
  void theAddressComesFromStatewrightAddressThenTheOlderTargetThenTheDefault() {
    assertEquals("10.0.0.7:443", StatewrightClient.builder()
        .fromEnvironment(env("STATEWRIGHT_ADDRESS", "10.0.0.7:443", "STATEWRIGHT_TARGET", "old:1")).address());
    assertEquals("old:1", StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TARGET", "old:1")).address());
    assertEquals("old:1", StatewrightClient.builder()
        .fromEnvironment(env("STATEWRIGHT_ADDRESS", "  ", "STATEWRIGHT_TARGET", "old:1")).address());
    assertEquals(StatewrightClient.DEFAULT_TARGET, StatewrightClient.builder().fromEnvironment(env()).address());
    // What the environment does not set stays as the builder had it, and later calls win.
    assertEquals("kept:1", StatewrightClient.builder("kept:1").fromEnvironment(env()).address());
    assertEquals("later:2", StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_ADDRESS", "a:1")).address("later:2").address());
  }

  @Test
  void anyTlsVariableMeansTls() throws Exception {
    TestCerts ca = new TestCerts("options CA");
    Path caFile = file("ca.pem", ca.caPem());
    Path[] client = ca.client("spiffe://statewright.test/c").write(dir, "client");
    assertFalse(StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TOKEN", "t")).usesTls());
    assertTrue(StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TLS_CA", caFile.toString())).usesTls());
    assertTrue(StatewrightClient.builder()
        .fromEnvironment(env("STATEWRIGHT_TLS_CERT", client[0].toString(), "STATEWRIGHT_TLS_KEY", client[1].toString())).usesTls());
    assertTrue(StatewrightClient.builder().tls(true).usesTls());
    assertTrue(StatewrightClient.builder().caPem(ca.caPem()).usesTls());
    assertFalse(StatewrightClient.builder().usesTls());
  }

  @Test
  void aCertificateWithoutItsKeyIsRefusedNamingTheMissingVariable() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TLS_CERT", "/x/tls.crt")));
    assertTrue(e.getMessage().contains("only STATEWRIGHT_TLS_CERT is set"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TLS_KEY", "/x/tls.key")));
    assertTrue(e.getMessage().contains("only STATEWRIGHT_TLS_KEY is set"), e.getMessage());
  }

  @Test
  void theTokenFromTheEnvironmentIsTrimmedAndABadOneIsNeverQuoted() {
    assertTrue(StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TOKEN", "sw_abc\n")).hasToken());
    assertFalse(StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TOKEN", "")).hasToken());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TOKEN", "secret part")));
    assertTrue(e.getMessage().startsWith("STATEWRIGHT_TOKEN is not a usable token"), e.getMessage());
    assertFalse(e.getMessage().contains("secret"), e.getMessage());
  }

  @Test
  void aTokenIsNeverSentInPlaintextOffThisMachineUnlessAllowed() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> StatewrightClient.builder("statewright.example.com:50051").token("t").build());
    assertTrue(e.getMessage().contains("refusing to send a bearer token in plaintext to statewright.example.com:50051"), e.getMessage());
    assertTrue(e.getMessage().contains("allowInsecureToken(true)"), e.getMessage());
    assertThrows(IllegalStateException.class,
        () -> StatewrightClient.builder("10.1.2.3:50051").tokenProvider(() -> BearerToken.of("t")).build());
    // The same from the environment: a token, a remote address, no TLS variable.
    assertThrows(IllegalStateException.class, () -> StatewrightClient.builder()
        .fromEnvironment(env("STATEWRIGHT_ADDRESS", "statewright.example.com:50051", "STATEWRIGHT_TOKEN", "t")).build());

    // Loopback, TLS, or the explicit flag: built (nothing connects until a call).
    for (String local : new String[] {"127.0.0.1:50051", "localhost:50051", "[::1]:50051", "dns:///localhost:1"}) {
      StatewrightClient.builder(local).token("t").build().close();
    }
    StatewrightClient.builder("statewright.example.com:443").tls(true).token("t").build().close();
    StatewrightClient.builder("statewright.example.com:50051").token("t").allowInsecureToken(true).build().close();
    // Without a token, plaintext anywhere is the caller's business.
    StatewrightClient.builder("statewright.example.com:50051").build().close();
  }

  @Test
  void contradictoryOptionsAreRefused() throws Exception {
    TestCerts ca = new TestCerts("options CA");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> StatewrightClient.builder().caPem(ca.caPem()).tls(false).build());
    assertTrue(e.getMessage().contains("TLS is turned off, but the CA PEM is given"), e.getMessage());
    try (FakeService fake = new FakeService()) {
      e = assertThrows(IllegalStateException.class, () -> StatewrightClient.builder("a:1").channel(fake.channel).build());
      assertTrue(e.getMessage().startsWith("channel(...) is used as it is"), e.getMessage());
      assertThrows(IllegalStateException.class, () -> StatewrightClient.builder().channel(fake.channel).tls(true).build());
    }
  }

  @Test
  void unreadableOrWrongPemFilesAreNamedInTheError() throws Exception {
    Path missing = dir.resolve("absent.pem");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().fromEnvironment(env("STATEWRIGHT_TLS_CA", missing.toString())).build());
    assertTrue(e.getMessage().startsWith("cannot read STATEWRIGHT_TLS_CA (" + missing + ")"), e.getMessage());

    Path junk = file("junk.pem", "not a certificate".getBytes(StandardCharsets.US_ASCII));
    e = assertThrows(IllegalArgumentException.class, () -> StatewrightClient.builder().caFile(junk).build());
    assertTrue(e.getMessage().startsWith("the CA file " + junk + " holds no"), e.getMessage());

    TestCerts ca = new TestCerts("options CA");
    TestCerts.Issued client = ca.client("spiffe://statewright.test/c");
    byte[] sec1 = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n".getBytes(StandardCharsets.US_ASCII);
    e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().clientCertificatePem(client.certificate(), sec1).build());
    assertTrue(e.getMessage().contains("is not PKCS#8"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().clientCertificatePem(client.key(), client.key()).build());
    assertTrue(e.getMessage().startsWith("the client certificate PEM holds no"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> StatewrightClient.builder().clientCertificatePem(client.certificate(), client.certificate()).build());
    assertTrue(e.getMessage().startsWith("the client key PEM holds no PEM private key"), e.getMessage());
  }

  @Test
  void loopbackIsToldFromTheTargetWithoutResolvingAnything() {
    for (String local : new String[] {
      "127.0.0.1:50051", "127.8.9.10:1", "localhost:50051", "LOCALHOST", "[::1]:50051", "::1", "dns:///127.0.0.1:5",
      "dns://8.8.8.8/localhost:5", "unix:///run/statewright.sock"
    }) {
      assertTrue(Targets.isLoopback(local), local);
    }
    for (String remote : new String[] {
      "10.0.0.1:50051", "statewright.example.com:443", "localhost.example.com:1", "[2001:db8::1]:443", "dns:///example.com:1", "", "0.0.0.0:1"
    }) {
      assertFalse(Targets.isLoopback(remote), remote);
    }
  }

  @Test
  void aBearerTokenIsAHeaderValueAndNeverShowsItself() {
    assertEquals("sw_abc.def-1", BearerToken.of("sw_abc.def-1").value());
    for (String bad : new String[] {"", "two words", "line\nbreak", "caf\u00e9"}) {
      assertThrows(IllegalArgumentException.class, () -> BearerToken.of(bad), bad);
    }
    BearerToken token = BearerToken.expiringAt("sw_secret", Instant.parse("2030-01-01T00:00:00Z"));
    assertFalse(token.toString().contains("sw_secret"), token.toString());
    assertTrue(token.toString().contains("2030-01-01"), token.toString());
    assertTrue(BearerToken.of("x").expiresAt().isEmpty());
    assertThrows(IllegalArgumentException.class, () -> StatewrightClient.builder().token("a b"));
  }
}
