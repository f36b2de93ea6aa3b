package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.WatchEventType;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ServerCredentials;
import io.grpc.Status;
import io.grpc.TlsServerCredentials;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client against a real gRPC server on 127.0.0.1 over the network transport: TLS with a CA of
 * the test's own, mTLS, and the plaintext rule checked per call. Certificates are made per test and
 * live an hour.
 */
class TlsTest {
  private static final Workflow DONE =
      Workflow.newBuilder().setName("workflows/w").setRevision(2).setStatus(WorkflowStatus.WORKFLOW_STATUS_COMPLETED).build();

  @TempDir Path dir;
  private TestCerts ca;
  private TestCerts.Issued server;
  private FakeService fake;

  @BeforeEach
  void setUp() throws Exception {
    ca = new TestCerts("statewright test CA");
    server = ca.server();
  }

  @AfterEach
  void tearDown() {
    if (fake != null) {
      fake.close();
    }
  }

  private FakeService serve(ServerCredentials credentials) throws Exception {
    fake = FakeService.onPort(credentials);
    fake.getWorkflow = r -> GetWorkflowResponse.newBuilder().setWorkflow(DONE).build();
    fake.watchWorkflow = (r, out) -> {
      out.onNext(WatchWorkflowResponse.newBuilder().setType(WatchEventType.WATCH_EVENT_TYPE_CURRENT).setRevision(2).setWorkflow(DONE).build());
      out.onCompleted();
    };
    return fake;
  }

  private ServerCredentials tls() throws Exception {
    return TlsServerCredentials.newBuilder().keyManager(server.certificateStream(), server.keyStream()).build();
  }

  private ServerCredentials mtls() throws Exception {
    return TlsServerCredentials.newBuilder()
        .keyManager(server.certificateStream(), server.keyStream())
        .trustManager(new java.io.ByteArrayInputStream(ca.caPem()))
        .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE)
        .build();
  }

  private SSLSession session(int call) {
    SSLSession session = fake.callAttributes.get(call).get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
    assertNotNull(session, "call " + call + " was not over TLS");
    return session;
  }

  @Test
  void tlsWithTheCaAsPemOrFileCarriesTheTokenOnUnaryCallsAndStreams() throws Exception {
    serve(tls());
    try (StatewrightClient client = StatewrightClient.builder(fake.address()).caPem(ca.caPem()).token("sw_tls").build()) {
      assertEquals(2, client.get("w").getRevision());
      client.watch("w", WatchOptions.defaults(), event -> {});
    }
    Path caFile = Files.write(dir.resolve("ca.pem"), ca.caPem());
    try (StatewrightClient client = StatewrightClient.builder(fake.address()).caFile(caFile).token("sw_tls").build()) {
      client.get("w");
    }
    assertEquals(List.of("GetWorkflow Bearer sw_tls", "WatchWorkflow Bearer sw_tls", "GetWorkflow Bearer sw_tls"), fake.calls);
    session(0);
    session(1);
  }

  @Test
  void aServerCertificateFromAnotherCaIsRefused() throws Exception {
    serve(tls());
    byte[] otherCa = new TestCerts("someone else's CA").caPem();
    try (StatewrightClient client = StatewrightClient.builder(fake.address()).caPem(otherCa).token("sw_tls").build()) {
      StatewrightException e = assertThrows(StatewrightException.class, () -> client.get("w"));
      assertEquals(Status.Code.UNAVAILABLE, e.code());
      // The handshake's own reason, not just gRPC's "io exception".
      assertTrue(e.getMessage().contains("certification path"), e.getMessage());
    }
    // Nor does the system's trust store know the test CA.
    try (StatewrightClient client = StatewrightClient.builder(fake.address()).tls(true).build()) {
      assertEquals(Status.Code.UNAVAILABLE, assertThrows(StatewrightException.class, () -> client.get("w")).code());
    }
    assertEquals(List.of(), fake.calls);
  }

  @Test
  void aPlaintextClientGetsNowhereOnATlsPort() throws Exception {
    serve(tls());
    try (StatewrightClient client = StatewrightClient.connect(fake.address())) {
      StatewrightException e = assertThrows(StatewrightException.class, () -> client.get("w"));
      assertEquals(Status.Code.UNAVAILABLE, e.code());
    }
    assertEquals(List.of(), fake.calls);
  }

  @Test
  void mtlsPresentsTheClientCertificateAndTheServerSeesItsIdentity() throws Exception {
    serve(mtls());
    TestCerts.Issued worker = ca.client("spiffe://statewright.test/worker-1");
    try (StatewrightClient client = StatewrightClient.builder(fake.address())
        .caPem(ca.caPem())
        .clientCertificatePem(worker.certificate(), worker.key())
        .build()) {
      client.get("w");
      client.watch("w", WatchOptions.defaults(), event -> {});
    }
    X509Certificate peer = (X509Certificate) session(0).getPeerCertificates()[0];
    assertTrue(peer.getSubjectAlternativeNames().contains(List.of(6, "spiffe://statewright.test/worker-1")), peer.getSubjectAlternativeNames().toString());
    assertEquals(List.of("GetWorkflow -", "WatchWorkflow -"), fake.calls);
  }

  @Test
  void mtlsWithoutAClientCertificateIsRefused() throws Exception {
    serve(mtls());
    try (StatewrightClient client = StatewrightClient.builder(fake.address()).caPem(ca.caPem()).token("sw_tls").build()) {
      StatewrightException e = assertThrows(StatewrightException.class, () -> client.get("w"));
      assertEquals(Status.Code.UNAVAILABLE, e.code());
    }
    assertEquals(List.of(), fake.calls);
  }

  @Test
  void theEnvironmentAloneSetsUpMtlsAndTheToken() throws Exception {
    serve(mtls());
    Path caFile = Files.write(dir.resolve("ca.pem"), ca.caPem());
    Path[] client = ca.client("spiffe://statewright.test/env").write(dir, "client");
    Map<String, String> env = Map.of(
        "STATEWRIGHT_ADDRESS", fake.address(),
        "STATEWRIGHT_TARGET", "127.0.0.1:1",
        "STATEWRIGHT_TOKEN", "sw_env",
        "STATEWRIGHT_TLS_CA", caFile.toString(),
        "STATEWRIGHT_TLS_CERT", client[0].toString(),
        "STATEWRIGHT_TLS_KEY", client[1].toString());
    try (StatewrightClient c = StatewrightClient.builder().fromEnvironment(env).build()) {
      c.get("w");
    }
    assertEquals(List.of("GetWorkflow Bearer sw_env"), fake.calls);
    X509Certificate peer = (X509Certificate) session(0).getPeerCertificates()[0];
    assertTrue(peer.getSubjectAlternativeNames().contains(List.of(6, "spiffe://statewright.test/env")));
  }

  @Test
  void onAChannelOfYourOwnTheTokenIsWithheldFromAPlaintextRemoteAuthority() throws Exception {
    serve(InsecureServerCredentials.create());
    // Plaintext, and the authority names a remote host: as if the address led off this machine.
    ManagedChannel remote = Grpc.newChannelBuilder(fake.address(), InsecureChannelCredentials.create())
        .overrideAuthority("statewright.example.com:50051").build();
    try {
      try (StatewrightClient client = StatewrightClient.builder().channel(remote).token("sw_secret").build()) {
        StatewrightException e = assertThrows(StatewrightException.class, () -> client.get("w"));
        assertInstanceOf(UnauthenticatedException.class, e);
        assertTrue(e.getMessage().contains("refusing to send a bearer token in plaintext to statewright.example.com:50051"), e.getMessage());
        assertTrue(!e.getMessage().contains("sw_secret"));
      }
      assertEquals(List.of(), fake.calls);
      try (StatewrightClient client = StatewrightClient.builder().channel(remote).token("sw_secret").allowInsecureToken(true).build()) {
        client.get("w");
      }
      assertEquals(List.of("GetWorkflow Bearer sw_secret"), fake.calls);
    } finally {
      remote.shutdownNow();
    }
    // A plaintext loopback server, as `statewrightd dev` runs, gets the token without the flag.
    try (StatewrightClient client = StatewrightClient.builder(fake.address()).token("sw_local").build()) {
      client.get("w");
    }
    assertEquals("GetWorkflow Bearer sw_local", fake.calls.get(1));
  }
}
