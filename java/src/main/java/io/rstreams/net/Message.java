package io.rstreams.net;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * A one-way message from the peer to one of this end's handlers (extension messages,
 * PROTOCOL.md §20), as the handler sees it: {@code RsioServer.builder().handler("events/{kind}", m -> ...)}.
 *
 * @param name the whole name the peer sent it to, e.g. {@code events/click?x=1}
 * @param path the part before {@code ?}
 * @param params the query's {@code key=value} pairs (percent-decoded) and the pattern's {@code {fields}}
 * @param body the body, as the sender gave it (possibly empty)
 * @param connection the connection it arrived on: a handler may send back on it
 */
public record Message(String name, String path, Map<String, String> params, byte[] body, RsioConnection connection) {
    /** Copies the parameters. */
    public Message {
        params = Map.copyOf(params);
    }

    /** The parameter {@code key}, or {@code fallback} if absent. */
    public String param(String key, String fallback) {
        return params.getOrDefault(key, fallback);
    }

    /** The body decoded as UTF-8 (malformed bytes replaced). */
    public String text() {
        return new String(body, StandardCharsets.UTF_8);
    }
}
