package dev.statewright.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.ByteArrayInputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A CA made for one test, issuing a server certificate for 127.0.0.1 and client certificates with a
 * URI SAN (a SPIFFE-style identity), as PEM: P-256 keys (PKCS#8), valid for an hour from five
 * minutes ago. Nothing is kept beyond the test.
 */
final class TestCerts {
  static final Duration LIFETIME = Duration.ofHours(1);

  /** A certificate and its private key, as PEM. */
  record Issued(byte[] certificate, byte[] key) {
    InputStream certificateStream() {
      return new ByteArrayInputStream(certificate);
    }

    InputStream keyStream() {
      return new ByteArrayInputStream(key);
    }

    /** Writes {@code stem.pem} and {@code stem.key} into {@code dir}; returns {cert, key}. */
    Path[] write(Path dir, String stem) throws IOException {
      Path cert = Files.write(dir.resolve(stem + ".pem"), certificate);
      Path k = Files.write(dir.resolve(stem + ".key"), key);
      return new Path[] {cert, k};
    }
  }

  private final KeyPair caKey;
  private final X500Name caName;
  private final X509Certificate caCert;

  TestCerts(String name) throws GeneralSecurityException {
    caKey = keyPair();
    caName = new X500Name("CN=" + name);
    X509v3CertificateBuilder builder = builder(caName, caName, caKey);
    try {
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    } catch (IOException e) {
      throw new GeneralSecurityException(e);
    }
    caCert = sign(builder, caKey);
  }

  /** The CA's certificate, PEM. */
  byte[] caPem() throws GeneralSecurityException {
    return pem("CERTIFICATE", caCert.getEncoded());
  }

  /** A server certificate for 127.0.0.1 and localhost. */
  Issued server() throws GeneralSecurityException {
    return issue("server", KeyPurposeId.id_kp_serverAuth,
        new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName, "localhost"));
  }

  /** A client certificate naming {@code uri} (e.g. {@code spiffe://statewright.test/worker}). */
  Issued client(String uri) throws GeneralSecurityException {
    return issue("client", KeyPurposeId.id_kp_clientAuth, new GeneralName(GeneralName.uniformResourceIdentifier, uri));
  }

  private Issued issue(String common, KeyPurposeId usage, GeneralName... names) throws GeneralSecurityException {
    KeyPair key = keyPair();
    X509v3CertificateBuilder builder = builder(caName, new X500Name("CN=" + common), key);
    try {
      builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names));
      builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(usage));
    } catch (IOException e) {
      throw new GeneralSecurityException(e);
    }
    X509Certificate cert = sign(builder, caKey);
    return new Issued(pem("CERTIFICATE", cert.getEncoded()), pem("PRIVATE KEY", key.getPrivate().getEncoded()));
  }

  private static KeyPair keyPair() throws GeneralSecurityException {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    return generator.generateKeyPair();
  }

  private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair key) {
    Instant now = Instant.now();
    return new JcaX509v3CertificateBuilder(
        issuer,
        new BigInteger(64, new SecureRandom()),
        Date.from(now.minus(Duration.ofMinutes(5))),
        Date.from(now.plus(LIFETIME)),
        subject,
        key.getPublic());
  }

  private static X509Certificate sign(X509v3CertificateBuilder builder, KeyPair signer) throws GeneralSecurityException {
    try {
      return new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer.getPrivate())));
    } catch (OperatorCreationException e) {
      throw new GeneralSecurityException(e);
    }
  }

  /** DER as PEM (PKCS#8 for a private key: what {@code getEncoded()} gives). */
  static byte[] pem(String type, byte[] der) {
    String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
    return ("-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n").getBytes(StandardCharsets.US_ASCII);
  }
}
