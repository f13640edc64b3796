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
    /** What Netty counts for each message unsent besides its bytes (an outbound buffer entry's overhead). */
    private static final int ENTRY_OVERHEAD = Integer.getInteger("io.netty.transport.outboundBufferEntrySizeOverhead", 96);

    /**
     * Whether the other side was cut off only once more than MAX_UNSENT of its pongs waited, as
     * PongLimit counts them: Netty counts each unsent pong of {@code pong} bytes with its entry's
     * overhead, so the other side had read at least MAX_UNSENT / (pong + overhead) of the
     * {@code ping}-byte pings by then, and they had all been sent (the write that failed may have
     * delivered part of its chunk). What was sent beyond them waited in the socket buffers, a few
     * MB that vary with the system: no bound of PongLimit's.
     */
    boolean cutOffPastMaxUnsent(int ping, int pong) {
        return cutOff && sent + chunk >= Endpoint.MAX_UNSENT / (pong + ENTRY_OVERHEAD) * ping;
    }

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
