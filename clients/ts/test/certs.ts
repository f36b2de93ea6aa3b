// Short-lived certificates made for one test run: a CA, server certificates for 127.0.0.1
// and localhost, and client certificates with a URI SAN. ECDSA P-256 keys from Node's
// WebCrypto; nothing is written to disk unless a test does so itself.
import "reflect-metadata";

import { webcrypto } from "node:crypto";

import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto);

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const LIFETIME_MS = 60 * 60 * 1000;
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

/** A certificate and its private key, both PEM. */
export interface Issued {
  readonly cert: string;
  readonly key: string;
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
}

async function keyPem(pair: webcrypto.CryptoKeyPair): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey("pkcs8", pair.privateKey), "PRIVATE KEY");
}

function serial(): string {
  return webcrypto.getRandomValues(new Uint8Array(8)).reduce((hex, b) => hex + b.toString(16).padStart(2, "0"), "01");
}

function validity(): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - 5 * 60 * 1000), notAfter: new Date(now + LIFETIME_MS) };
}

/** A CA that issues what a test needs; it lives an hour. */
export class ScratchCA {
  private constructor(
    private readonly pair: webcrypto.CryptoKeyPair,
    private readonly certificate: x509.X509Certificate,
    /** The CA certificate, PEM. */
    readonly cert: string,
  ) {}

  static async create(name = "statewright test CA"): Promise<ScratchCA> {
    const pair = await keyPair();
    const certificate = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=${name}`,
      ...validity(),
      keys: pair,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    });
    return new ScratchCA(pair, certificate, certificate.toString("pem"));
  }

  /** A server certificate for 127.0.0.1 and localhost, or a client one with a URI SAN. */
  async issue(options: { server?: boolean; uri?: string; common?: string } = {}): Promise<Issued> {
    const pair = await keyPair();
    const names: x509.JsonGeneralName[] = [];
    if (options.server) {
      names.push({ type: "dns", value: "localhost" }, { type: "ip", value: "127.0.0.1" });
    }
    if (options.uri !== undefined) {
      names.push({ type: "url", value: options.uri });
    }
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([options.server ? SERVER_AUTH : CLIENT_AUTH]),
    ];
    if (names.length > 0) {
      extensions.push(new x509.SubjectAlternativeNameExtension(names));
    }
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${options.common ?? (options.server ? "statewright test server" : "statewright test client")}`,
      issuer: this.certificate.subject,
      ...validity(),
      publicKey: pair.publicKey,
      signingKey: this.pair.privateKey,
      signingAlgorithm: ALGORITHM,
      extensions,
    });
    return { cert: certificate.toString("pem"), key: await keyPem(pair) };
  }
}
