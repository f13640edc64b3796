package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Hex;
import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * The auth extension's payloads of docs/protocol-vectors.json (PROTOCOL.md §15.1): this binding's
 * credentials codec reads each to the vector's {@code payload_fields} and writes it back byte for byte.
 */
public class VectorPayloadsTest {

    /** The vectors of the given message types, as read from docs/protocol-vectors.json. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> vectorsOf(String... types) throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
        List<Map<String, Object>> all = (List<Map<String, Object>>) ((Map<String, Object>) Json.parse(text)).get("vectors");
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map<String, Object> v : all) {
            if (List.of(types).contains((String) v.get("type"))) {
                out.add(v);
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    static byte[] payload(Map<String, Object> vector) {
        return Hex.decode((String) ((Map<String, Object>) ((Map<String, Object>) vector.get("fields")).get("payload")).get("hex"));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> fields(Map<String, Object> vector) {
        return (Map<String, Object>) vector.get("payload_fields");
    }

    @DataProvider(name = "credentials")
    public Object[][] credentials() throws IOException {
        List<Map<String, Object>> vectors = vectorsOf("authenticate", "subscribeCredentials");
        assertTrue(vectors.size() >= 3, "expected the auth vectors, got " + vectors.size());
        Object[][] out = new Object[vectors.size()][];
        for (int k = 0; k < out.length; k++) {
            out[k] = new Object[] {vectors.get(k).get("type") + " " + vectors.get(k).get("note"), vectors.get(k)};
        }
        return out;
    }

    @Test(dataProvider = "credentials", timeOut = 10_000)
    public void credentialsReadAndWriteAsTheVectorSays(String name, Map<String, Object> vector) throws Exception {
        byte[] payload = payload(vector);
        Map<String, Object> expected = fields(vector);
        int at = 0;
        byte[] prefix = new byte[0];
        if ("subscribeCredentials".equals(vector.get("type"))) {
            int[] next = {0};
            long sid = Varint.read(payload, 0, payload.length, next);
            assertEquals(BigInteger.valueOf(sid), expected.get("subscriber"), name);
            at = next[0];
            prefix = new byte[at];
            System.arraycopy(payload, 0, prefix, 0, at);
        }
        Credentials got = Credentials.decode(payload, at, payload.length);
        Credentials made;
        if (((BigInteger) expected.get("kind")).intValue() == 1) {
            assertEquals(got.token(), expected.get("token"), name);
            made = Credentials.token((String) expected.get("token"));
        } else {
            assertEquals(got.user(), expected.get("user"), name);
            assertEquals(got.password(), expected.get("password"), name);
            made = Credentials.userPassword((String) expected.get("user"), (String) expected.get("password"));
        }
        byte[] encoded = made.encode();
        byte[] whole = new byte[prefix.length + encoded.length];
        System.arraycopy(prefix, 0, whole, 0, prefix.length);
        System.arraycopy(encoded, 0, whole, prefix.length, encoded.length);
        assertEquals(Hex.encode(whole), Hex.encode(payload), name);
    }
}
