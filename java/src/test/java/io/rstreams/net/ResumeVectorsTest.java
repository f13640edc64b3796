package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Hex;
import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.testng.annotations.Test;

/**
 * The resume extension's vectors of docs/protocol-vectors.json (PROTOCOL.md §16.2): this binding
 * reads their payloads to the vectors' {@code payload_fields} and writes resume and resumed byte for byte.
 */
public class ResumeVectorsTest {

    @SuppressWarnings("unchecked")
    private static Map<String, Object> vector(String type) throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
        for (Object v : (List<Object>) ((Map<String, Object>) Json.parse(text)).get("vectors")) {
            Map<String, Object> m = (Map<String, Object>) v;
            if (type.equals(m.get("type"))) {
                return m;
            }
        }
        throw new AssertionError("no vector for " + type);
    }

    @SuppressWarnings("unchecked")
    private static byte[] payload(Map<String, Object> vector) {
        return Hex.decode((String) ((Map<String, Object>) ((Map<String, Object>) vector.get("fields")).get("payload")).get("hex"));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> fields(Map<String, Object> vector) {
        return (Map<String, Object>) vector.get("payload_fields");
    }

    @SuppressWarnings("unchecked")
    private static byte[] hexField(Map<String, Object> fields, String name) {
        return Hex.decode((String) ((Map<String, Object>) fields.get(name)).get("hex"));
    }

    @Test(timeOut = 10_000)
    public void resumeReadsAndWritesAsTheVectorSays() throws Exception {
        Map<String, Object> v = vector("resume");
        Object[] got = ResumeFrames.tokenAndPosition(payload(v));
        byte[] token = hexField(fields(v), "token");
        long position = ((BigInteger) fields(v).get("position")).longValue();
        assertEquals(Hex.encode((byte[]) got[0]), Hex.encode(token));
        assertEquals(got[1], position);
        assertEquals(Hex.encode(ResumeFrames.resume(token, position)), v.get("hex"));
    }

    @Test(timeOut = 10_000)
    public void positionsReadAndWriteAsTheVectorsSay() throws Exception {
        for (String type : List.of("resumed", "resumeAck")) {
            Map<String, Object> v = vector(type);
            long position = ((BigInteger) fields(v).get("position")).longValue();
            assertEquals(ResumeFrames.position(payload(v), type), position, type);
            assertEquals(Hex.encode(ResumeFrames.varint(position)), Hex.encode(payload(v)), type);
        }
        Map<String, Object> resumed = vector("resumed");
        assertEquals(Hex.encode(ResumeFrames.resumed(((BigInteger) fields(resumed).get("position")).longValue())),
                resumed.get("hex"));
    }

    @Test(timeOut = 10_000)
    public void refusedWritesAsTheVectorSays() throws Exception {
        Map<String, Object> v = vector("resumeRefused");
        assertEquals(Hex.encode(ResumeFrames.refused((String) fields(v).get("reason"))), v.get("hex"));
        assertTrue(new String(payload(v), StandardCharsets.UTF_8).equals(fields(v).get("reason")));
    }
}
