package io.rstreams.testing;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made once per test run with the JDK's
 * keytool under target/, with the server and client SSLContexts built from it, its PEM (for
 * the Python side's --cafile and --tls-cert) and its private key's PEM (--tls-key).
 */
public final class TlsFixture {
    private static final char[] PASSWORD = "rstreams-test".toCharArray();
    private static TlsFixture instance;

    public final Path keystore;
    public final Path pem;
    public final Path key;
    public final SSLContext server;
    public final SSLContext client;

    private TlsFixture(Path dir) throws Exception {
        Files.createDirectories(dir);
        keystore = dir.resolve("server.p12");
        pem = dir.resolve("server.pem");
        key = dir.resolve("server-key.pem");
        Files.deleteIfExists(keystore);
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        run(List.of(keytool, "-genkeypair", "-alias", "server", "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", "CN=localhost", "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-validity", "2",
                "-storetype", "PKCS12", "-keystore", keystore.toString(), "-storepass", new String(PASSWORD)));
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(keystore)) {
            ks.load(in, PASSWORD);
        }
        // the PEMs written here, not by a second keytool run (a JVM start-up each)
        java.util.Base64.Encoder base64 = java.util.Base64.getMimeEncoder(64, "\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        Files.writeString(pem, "-----BEGIN CERTIFICATE-----\n" + base64.encodeToString(ks.getCertificate("server").getEncoded())
                + "\n-----END CERTIFICATE-----\n");
        String pkcs8 = base64.encodeToString(ks.getKey("server", PASSWORD).getEncoded());
        Files.writeString(key, "-----BEGIN PRIVATE KEY-----\n" + pkcs8 + "\n-----END PRIVATE KEY-----\n");
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, PASSWORD);
        server = SSLContext.getInstance("TLS");
        server.init(kmf.getKeyManagers(), null, null);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        client = SSLContext.getInstance("TLS");
        client.init(null, tmf.getTrustManagers(), null);
    }

    public static synchronized TlsFixture get() throws Exception {
        if (instance == null) {
            instance = new TlsFixture(Path.of("target", "tls-test").toAbsolutePath());
        }
        return instance;
    }

    private static void run(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", cmd.subList(0, 2)) + " failed: " + out);
        }
    }
}
