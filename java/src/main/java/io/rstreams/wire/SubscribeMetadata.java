package io.rstreams.wire;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The key/value entries of one subscribe (extension metadata, PROTOCOL.md §18): sent by a
 * subscriber in a subscribeMetadata ({@code 0x94}) right before its subscribe, seen by the
 * serving side's authorize hook and publisher factory. Keys are 1-64 bytes of {@code a-z},
 * {@code 0-9}, {@code -}, {@code _} and {@code .}, each at most once; values are bytes (text is
 * UTF-8 by convention). Immutable, in the order the entries were given or received.
 *
 * <p>Payload: {@code subscriber: varint, count: varint, count × (key: string, value: bytes)}.
 * A receiver bounds it by {@link #MAX_BYTES} and {@link #MAX_ENTRIES} (§11's
 * {@code max_metadata_bytes} and {@code max_metadata_entries}).
 */
public final class SubscribeMetadata {
    /** Longest key, in bytes (§18.1). */
    public static final int MAX_KEY_LENGTH = 64;
    /** Largest subscribeMetadata payload accepted, §11's {@code max_metadata_bytes} (16 KiB). */
    public static final int MAX_BYTES = 16 * 1024;
    /** Most entries in one subscribeMetadata accepted, §11's {@code max_metadata_entries}. */
    public static final int MAX_ENTRIES = 64;
    /** No entries: what a subscribe without metadata carries. */
    public static final SubscribeMetadata EMPTY = new SubscribeMetadata(new LinkedHashMap<>());

    /** A received subscribeMetadata: the subscriber id it qualifies and its entries. */
    public record Received(long subscriber, SubscribeMetadata metadata) {}

    private final Map<String, byte[]> entries;
    private volatile byte[] encoded; // encodeEntries(), made once (the entries never change)

    private SubscribeMetadata(LinkedHashMap<String, byte[]> entries) {
        this.entries = Collections.unmodifiableMap(entries);
    }

    /**
     * Entries from {@code map}, in its iteration order: each value a {@code String} (sent as
     * UTF-8) or a {@code byte[]} (copied).
     *
     * @throws IllegalArgumentException naming the rule for a key that breaks §18.1 or a value of another type
     */
    public static SubscribeMetadata of(Map<String, ?> map) {
        Objects.requireNonNull(map, "metadata");
        LinkedHashMap<String, byte[]> entries = new LinkedHashMap<>();
        for (Map.Entry<String, ?> e : map.entrySet()) {
            String problem = keyProblem(e.getKey());
            if (problem != null) {
                throw new IllegalArgumentException(problem + " (PROTOCOL.md §18.1)");
            }
            Object value = e.getValue();
            if (value instanceof String text) {
                entries.put(e.getKey(), text.getBytes(StandardCharsets.UTF_8));
            } else if (value instanceof byte[] bytes) {
                entries.put(e.getKey(), bytes.clone());
            } else {
                throw new IllegalArgumentException("the metadata value of '" + e.getKey() + "' is a String or a byte[], got "
                        + (value == null ? "null" : value.getClass().getSimpleName()));
            }
        }
        return entries.isEmpty() ? EMPTY : new SubscribeMetadata(entries);
    }

    /** Why {@code key} is not a metadata key of §18.1, or null when it is one. */
    public static String keyProblem(String key) {
        boolean ok = key != null && !key.isEmpty() && key.length() <= MAX_KEY_LENGTH;
        for (int i = 0; ok && i < key.length(); i++) {
            char c = key.charAt(i);
            ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        }
        return ok ? null : "a metadata key is 1.." + MAX_KEY_LENGTH + " of a-z 0-9 - _ ., got '" + key + "'";
    }

    /** The keys, in order. */
    public Set<String> keys() {
        return entries.keySet();
    }

    /** How many entries. */
    public int size() {
        return entries.size();
    }

    /** Whether there are none. */
    public boolean isEmpty() {
        return entries.isEmpty();
    }

    /** Whether {@code key} has an entry. */
    public boolean contains(String key) {
        return entries.containsKey(key);
    }

    /** The value of {@code key} (a copy), or null. */
    public byte[] get(String key) {
        byte[] value = entries.get(key);
        return value == null ? null : value.clone();
    }

    /** The value of {@code key} as UTF-8 text (undecodable bytes replaced), or null. */
    public String text(String key) {
        byte[] value = entries.get(key);
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    /** The W3C Trace Context {@code traceparent} entry as text, or null. */
    public String traceparent() {
        return text("traceparent");
    }

    /** The entries as text (UTF-8, undecodable bytes replaced), in order. */
    public Map<String, String> texts() {
        Map<String, String> out = new LinkedHashMap<>();
        for (String key : entries.keySet()) {
            out.put(key, text(key));
        }
        return Collections.unmodifiableMap(out);
    }

    /** The payload after the subscriber id: count, then each key and value (§18.1); encoded once. */
    public byte[] encodeEntries() {
        byte[] done = encoded;
        if (done == null) {
            done = encodeNow();
            encoded = done;
        }
        return done.clone();
    }

    private byte[] encodeNow() {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        varint(out, entries.size());
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            byte[] key = e.getKey().getBytes(StandardCharsets.US_ASCII);
            varint(out, key.length);
            out.writeBytes(key);
            varint(out, e.getValue().length);
            out.writeBytes(e.getValue());
        }
        return out.toByteArray();
    }

    /** A subscribeMetadata payload for {@code subscriber} (§18.1). */
    public byte[] encode(long subscriber) {
        byte[] done = encoded;
        if (done == null) {
            done = encodeNow();
            encoded = done;
        }
        return payload(subscriber, done);
    }

    /** A subscribeMetadata payload: {@code subscriber}, then entries already encoded by {@link #encodeEntries}. */
    static byte[] payload(long subscriber, byte[] encodedEntries) {
        byte[] payload = new byte[Varint.size(subscriber) + encodedEntries.length];
        System.arraycopy(encodedEntries, 0, payload, Varint.write(subscriber, payload, 0), encodedEntries.length);
        return payload;
    }

    private static void varint(java.io.ByteArrayOutputStream out, long value) {
        byte[] b = new byte[Varint.MAX_BYTES];
        out.write(b, 0, Varint.write(value, b, 0));
    }

    /**
     * A received subscribeMetadata payload.
     *
     * @throws ProtocolException citing §11 (code 7) above {@code maxBytes} or with more than
     *     {@code maxEntries} entries (checked when the count is read), else citing §18.1 for a
     *     payload that is not exactly the form: a truncated or non-minimal varint, a key that breaks
     *     the rules or appears twice, a key or value running past the payload, trailing bytes
     */
    public static Received decode(byte[] payload, int maxBytes, int maxEntries) throws ProtocolException {
        if (payload.length > maxBytes) {
            throw ProtocolException.limit("subscribeMetadata of " + payload.length + " bytes exceeds max_metadata_bytes="
                    + maxBytes + " (PROTOCOL.md §11)");
        }
        int[] next = new int[1];
        long subscriber = varint(payload, next);
        long count = varint(payload, next);
        if (Long.compareUnsigned(count, maxEntries) > 0) {
            throw ProtocolException.limit("subscribeMetadata with " + Long.toUnsignedString(count)
                    + " entries exceeds max_metadata_entries=" + maxEntries + " (PROTOCOL.md §11)");
        }
        LinkedHashMap<String, byte[]> entries = new LinkedHashMap<>();
        for (long i = 0; i < count; i++) {
            long keyLength = varint(payload, next);
            if (Long.compareUnsigned(keyLength, payload.length - next[0]) > 0) {
                throw malformed("a key runs past the payload");
            }
            int at = next[0];
            for (int k = at; k < at + keyLength; k++) {
                if (payload[k] < 0) {
                    throw malformed("a key is not ASCII");
                }
            }
            String key = new String(payload, at, (int) keyLength, StandardCharsets.US_ASCII);
            next[0] = at + (int) keyLength;
            if (keyProblem(key) != null) { // the rule, without the key (rstreams' words)
                throw malformed("a metadata key is 1.." + MAX_KEY_LENGTH + " of a-z 0-9 - _ .");
            }
            if (entries.containsKey(key)) {
                throw malformed("key " + ContentTypes.quoted(key) + " twice");
            }
            long valueLength = varint(payload, next);
            if (Long.compareUnsigned(valueLength, payload.length - next[0]) > 0) {
                throw malformed("a value runs past the payload");
            }
            entries.put(key, java.util.Arrays.copyOfRange(payload, next[0], next[0] + (int) valueLength));
            next[0] += (int) valueLength;
        }
        if (next[0] != payload.length) {
            throw malformed((payload.length - next[0]) + " trailing bytes");
        }
        return new Received(subscriber, entries.isEmpty() ? EMPTY : new SubscribeMetadata(entries));
    }

    private static long varint(byte[] payload, int[] next) throws ProtocolException {
        try {
            return Varint.read(payload, next[0], payload.length, next);
        } catch (Varint.Incomplete e) {
            throw malformed("truncated");
        } catch (ProtocolException e) {
            throw malformed("bad varint");
        }
    }

    private static ProtocolException malformed(String what) {
        return new ProtocolException("malformed subscribeMetadata payload (" + what + ") (PROTOCOL.md §18.1)");
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SubscribeMetadata other) || other.entries.size() != entries.size()) {
            return false;
        }
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            if (!java.util.Arrays.equals(e.getValue(), other.entries.get(e.getKey()))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        int h = 0;
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            h += e.getKey().hashCode() ^ java.util.Arrays.hashCode(e.getValue());
        }
        return h;
    }

    /** The keys and each value's length, never the values (they may be tokens). */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder("SubscribeMetadata[");
        boolean first = true;
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            out.append(first ? "" : ", ").append(e.getKey()).append('=').append(e.getValue().length).append(" bytes");
            first = false;
        }
        return out.append(']').toString();
    }
}
