package io.rstreams.net;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * What a peer that pings and never reads got written: {@code sent} bytes of pings in whole
 * chunks of {@code chunk} bytes before the other side cut it off ({@code cutOff}) or the limit
 * was reached. The write that failed may have delivered part of its chunk.
 */
record PingFlood(long sent, int chunk, boolean cutOff) {
    /** Writes {@code ping} frames to {@code out}, in chunks of about 1 MiB, up to {@code limit} bytes. */
    static PingFlood write(OutputStream out, byte[] ping, long limit) {
        ByteArrayOutputStream pings = new ByteArrayOutputStream();
        while (pings.size() < (1 << 20)) {
            pings.writeBytes(ping);
        }
        byte[] chunk = pings.toByteArray();
        long sent = 0;
        try {
            while (sent < limit) { // the answering pongs back up: they are never read
                out.write(chunk);
                sent += chunk.length;
            }
        } catch (IOException reset) {
            return new PingFlood(sent, chunk.length, true);
        }
        return new PingFlood(sent, chunk.length, false);
    }
}
