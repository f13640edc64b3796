package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;

/**
 * The lingering close of a WebSocket whose peer broke PROTOCOL.md §1 ({@link WebSocketBridge}
 * sent the close: 1002, 1003, 1009), ended by the peer's answering close frame.
 *
 * <p>Sits in every WebSocket pipeline behind TLS (so it reads plaintext, and the TLS layer still
 * reads the peer's close_notify) and ahead of Netty's HTTP decoder, whose place Netty's frame
 * decoder takes at the handshake. Until the close it passes every byte on, reading them as those
 * decoders do: the HTTP head up to its empty line, then WebSocket frames (RFC 6455 §5.2), of which
 * it reads the headers and skips the payloads, so it knows where each frame ends even after the
 * frame decoder refused one (that decoder then reads nothing more: it would skip what follows a
 * byte per decoding step). A request with a body ({@link HandshakeCheck} says so) is not followed:
 * frames are not told apart then, and the close lingers to its bounds.
 *
 * <p>Once {@link #linger} is called it counts what is read against {@link Endpoint#LINGER_BYTES}
 * (past it, the channel closes), discards it after the decoder's refusal (else it goes on to the
 * decoder, the bridge dropping the frames), and closes the channel, once our close is written, as
 * soon as a close frame has been read whole: a peer that answers the close and waits for the TCP
 * close gets it then, not at the linger's 2 s bound. The peer's close_notify over TLS and the end
 * of its input reach the endpoint, which closes too.
 */
final class WebSocketLinger extends ChannelInboundHandlerAdapter {
    private enum Reading { HEAD, FRAMES, LOST }

    private Reading reading;
    /** HEAD: the line being read has a character other than CR. */
    private boolean lineStarted;
    /** HEAD: a line with characters was read (Netty skips empty lines before the first). */
    private boolean anyLine;
    /** FRAMES: the header being read, its bytes so far, its size once its second byte is read. */
    private final byte[] header = new byte[14];
    private int headerRead;
    private int headerSize;
    private int opcode;
    /** FRAMES: payload bytes of the current frame still to come; 0 while a header is read. */
    private long payloadLeft;
    /** A close frame was read whole. */
    private boolean closeRead;
    private boolean lingering;
    private boolean discard;
    private long counted;
    private ChannelFuture sent;

    /** {@code framesFirst}: the bytes are WebSocket frames from the first (no HTTP head to read past). */
    WebSocketLinger(boolean framesFirst) {
        reading = framesFirst ? Reading.FRAMES : Reading.HEAD;
    }

    /** One that does not know where frames begin (added once the close is sent): it lingers to the bounds. */
    static WebSocketLinger untracked() {
        WebSocketLinger linger = new WebSocketLinger(false);
        linger.reading = Reading.LOST;
        return linger;
    }

    /** The handshake's request has a body, which Netty's HTTP decoder reads: frames are not followed after it. */
    static void untrack(ChannelPipeline pipeline) {
        WebSocketLinger linger = pipeline.get(WebSocketLinger.class);
        if (linger != null) {
            linger.reading = Reading.LOST;
            linger.closeRead = false; // the body's bytes, read as frames, said nothing
        }
    }

    /**
     * Starts the lingering close: {@code sent} is the write of our close frame; {@code discard}:
     * what is read no longer goes on (the frame decoder refused). Closes at once (once {@code
     * sent} is done) if the peer's close frame was already read.
     */
    void linger(ChannelHandlerContext ctx, boolean discard, ChannelFuture sent) {
        this.lingering = true;
        this.discard = discard;
        this.sent = sent;
        if (closeRead) {
            closeAfterOurs(ctx);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf buf)) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (lingering) {
            counted += buf.readableBytes();
            boolean closed = closeRead || read(buf);
            if (discard) {
                buf.release();
            } else {
                ctx.fireChannelRead(buf);
            }
            if (counted > Endpoint.LINGER_BYTES) {
                ctx.close();
            } else if (closed) {
                closeAfterOurs(ctx);
            }
            return;
        }
        read(buf);
        ctx.fireChannelRead(buf); // the decoder may refuse a frame here, and linger() be called
    }

    private void closeAfterOurs(ChannelHandlerContext ctx) {
        sent.addListener(f -> ctx.close());
    }

    /** Follows {@code buf}'s bytes (not consuming them); true once a close frame was read whole. */
    private boolean read(ByteBuf buf) {
        int at = buf.readerIndex();
        int end = buf.writerIndex();
        if (reading == Reading.HEAD) {
            at = readHead(buf, at, end);
        }
        while (reading == Reading.FRAMES && at < end && !closeRead) {
            if (payloadLeft > 0) {
                int skip = (int) Math.min(payloadLeft, end - at);
                at += skip;
                payloadLeft -= skip;
                if (payloadLeft == 0) {
                    closeRead = opcode == 0x8;
                }
                continue;
            }
            header[headerRead++] = buf.getByte(at++);
            if (headerRead == 2) {
                int len7 = header[1] & 0x7F;
                headerSize = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + ((header[1] & 0x80) != 0 ? 4 : 0);
            }
            if (headerRead >= 2 && headerRead == headerSize) {
                frameHeaderRead();
            }
        }
        return closeRead;
    }

    /** Reads the HTTP head up to its empty line; returns where the frames start (or {@code end}). */
    private int readHead(ByteBuf buf, int at, int end) {
        while (at < end) {
            byte b = buf.getByte(at++);
            if (b == '\n') {
                if (!lineStarted && anyLine) {
                    reading = Reading.FRAMES;
                    return at;
                }
                anyLine |= lineStarted;
                lineStarted = false;
            } else if (b != '\r') {
                lineStarted = true;
            }
        }
        return at;
    }

    private void frameHeaderRead() {
        int len7 = header[1] & 0x7F;
        long length = len7;
        if (len7 == 126) {
            length = ((header[2] & 0xFF) << 8) | (header[3] & 0xFF);
        } else if (len7 == 127) {
            length = 0;
            for (int i = 2; i < 10; i++) {
                length = (length << 8) | (header[i] & 0xFF);
            }
            if (length < 0) { // not a frame length (the decoder refuses it): frames are not told apart past it
                reading = Reading.LOST;
                return;
            }
        }
        opcode = header[0] & 0x0F;
        headerRead = 0;
        payloadLeft = length;
        if (length == 0) {
            closeRead = opcode == 0x8;
        }
    }
}
