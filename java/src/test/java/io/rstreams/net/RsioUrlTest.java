package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.testng.annotations.Test;

/**
 * tests/net/url_refusals.json: a part an RS.io URL's scheme does not take (a user, a tcp/tls
 * path, a query outside ws/wss, a fragment) is refused with rstreams' parse_url's words, byte for
 * byte; the parts each scheme takes are accepted.
 */
public class RsioUrlTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> cases() throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("tests/net/url_refusals.json"), StandardCharsets.UTF_8);
        return (Map<String, Object>) Json.parse(text);
    }

    @Test(timeOut = 10_000)
    @SuppressWarnings("unchecked")
    public void aRefusedUrlReadsAsTheSharedTableSays() throws IOException {
        List<Object> refused = (List<Object>) cases().get("refused");
        assertTrue(!refused.isEmpty());
        for (Object each : refused) {
            Map<String, Object> c = (Map<String, Object>) each;
            String url = (String) c.get("url");
            IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> RsioUrl.parse(url));
            assertEquals(e.getMessage(), c.get("message"), url);
        }
    }

    @Test(timeOut = 10_000)
    @SuppressWarnings("unchecked")
    public void anAcceptedUrlOfTheSharedTableParses() throws IOException {
        for (Object url : (List<Object>) cases().get("accepted")) {
            assertEquals(RsioUrl.parse((String) url).scheme(), ((String) url).split(":", 2)[0], (String) url);
        }
    }
}
