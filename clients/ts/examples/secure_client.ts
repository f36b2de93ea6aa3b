// Connects with explicit security options instead of the environment: TLS with a private
// CA, a client certificate for mTLS, and a token from an OAuth 2.0 client-credentials
// endpoint that is fetched again shortly before it expires.
//   OAUTH_CLIENT_ID=... OAUTH_CLIENT_SECRET=... \
//   node dist/examples/secure_client.js HOST:PORT CA.pem CERT.pem KEY.pem TOKEN_URL
import { createStatewrightClient, type BearerToken } from "@statewright/client";

const [address, ca, cert, key, tokenUrl] = process.argv.slice(2);
if (!address || !ca || !cert || !key || !tokenUrl) {
  console.error("usage: secure_client HOST:PORT CA.pem CERT.pem KEY.pem TOKEN_URL");
  process.exit(2);
}

// Asked before a call whenever the last token is within 30 s of its expiry (or was refused).
async function clientCredentials(): Promise<BearerToken> {
  const response = await fetch(tokenUrl!, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: process.env["OAUTH_CLIENT_ID"] ?? "",
      client_secret: process.env["OAUTH_CLIENT_SECRET"] ?? "",
      audience: "statewright",
    }),
  });
  if (!response.ok) {
    throw new Error(`the token endpoint answered ${response.status}`);
  }
  const body = (await response.json()) as { access_token: string; expires_in: number };
  return { token: body.access_token, expiresAt: Date.now() + body.expires_in * 1000 };
}

const client = createStatewrightClient(address, { ca, cert, key, token: clientCredentials });
const diagnostics = await client.getDiagnostics({});
const listed = await client.listWorkflows({ pageSize: 10 });
console.log(`connected to statewright ${diagnostics.build?.version}: ${listed.workflows.length} workflows on the first page`);
