package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Which WebSocket handshakes a {@code ws://} or {@code wss://} server lets on to Netty's
 * handshake, as rstreams' Python and JavaScript servers do (PROTOCOL.md §1). Each refusal is an
 * HTTP answer, before any WebSocket frame, with a plain-text body saying what was wrong (a HEAD
 * gets the same status and headers without the body, RFC 9110 §9.3.2), checked
 * in this order: a path other than the server's gets 404 {@code RS.io is served at /path}; a
 * request that is not a GET asking for an upgrade to WebSocket (plain HTTP: no {@code Upgrade:
 * websocket} with {@code Connection: Upgrade}, as {@code curl} or a browser's address bar sends;
 * another upgrade, as {@code Upgrade: h2c}; another method) gets 426 with
 * {@code Upgrade: websocket}, naming the path, the subprotocol and §1; a
 * browser page from an origin not allowed gets 403 ({@link OriginCheck}); a handshake that does not
 * offer the subprotocol {@value WebSocketBridge#SUBPROTOCOL} gets 400 naming it, §1 and what was
 * offered. One offering it, alone or among others, goes on to Netty's handshake, which selects it.
 *
 * <p>The handler sits between the HTTP aggregator and Netty's WebSocket handshake, which fires its
 * HandshakeComplete past this handler: {@link WebSocketBridge} then takes it out of the pipeline
 * ({@link #leave}), so WebSocket frames do not pass through it.
 */
final class HandshakeCheck extends ChannelInboundHandlerAdapter {
    private final String path;
    private final OriginCheck origins;

    /** {@code origins}: the page check, null when every page may connect. */
    HandshakeCheck(String path, OriginCheck origins) {
        this.path = path;
        this.origins = origins;
    }

    /** Out of {@code pipeline}, if it is there: called once the WebSocket handshake is complete. */
    static void leave(ChannelPipeline pipeline) {
        if (pipeline.get(HandshakeCheck.class) != null) {
            pipeline.remove(HandshakeCheck.class);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof FullHttpRequest request) {
            String uri = request.uri();
            int query = uri.indexOf('?');
            if (!(query < 0 ? uri : uri.substring(0, query)).equals(path)) {
                request.release();
                refuse(ctx, HttpResponseStatus.NOT_FOUND, "RS.io is served at " + path + "\n", isHead(request));
                return;
            }
            if (!asksForWebSocket(request)) {
                request.release();
                refuse(ctx, HttpResponseStatus.UPGRADE_REQUIRED, notUpgraded(path), isHead(request));
                return;
            }
            if (origins != null && origins.refuses(ctx, request)) {
                request.release();
                return;
            }
            List<String> offered = offered(request);
            if (!offered.contains(WebSocketBridge.SUBPROTOCOL)) {
                request.release();
                refuse(ctx, HttpResponseStatus.BAD_REQUEST, missingSubprotocol(offered));
                return;
            }
            if (request.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)
                    || !request.headers().get(HttpHeaderNames.CONTENT_LENGTH, "0").trim().equals("0")) {
                WebSocketLinger.untrack(ctx.pipeline()); // a body Netty's HTTP decoder read: the frames start past it
            }
            // one header line for them all: Netty's handshake reads only the first (RFC 6455 allows several)
            request.headers().set(HttpHeaderNames.SEC_WEBSOCKET_PROTOCOL, String.join(", ", offered));
        }
        ctx.fireChannelRead(msg);
    }

    /** Whether {@code request} is a HEAD, whose answer has no body (RFC 9110 §9.3.2). */
    private static boolean isHead(FullHttpRequest request) {
        return HttpMethod.HEAD.equals(request.method());
    }

    /** Whether {@code request} is a GET asking for an upgrade to WebSocket, as Netty's handshake reads it. */
    private static boolean asksForWebSocket(FullHttpRequest request) {
        return HttpMethod.GET.equals(request.method())
                && request.headers().containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE, true)
                && request.headers().containsValue(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET, true);
    }

    /** The body of the 426 answering a request at {@code path} that is not a GET asking for an upgrade to WebSocket. */
    static String notUpgraded(String path) {
        return "RS.io is served at " + path + " over WebSocket with the subprotocol " + WebSocketBridge.SUBPROTOCOL
                + " (PROTOCOL.md §1); this request is not a GET asking for an upgrade to WebSocket\n";
    }

    /** The subprotocols {@code request} offers, in its order, from every Sec-WebSocket-Protocol header. */
    private static List<String> offered(FullHttpRequest request) {
        List<String> names = new ArrayList<>();
        for (String header : request.headers().getAll(HttpHeaderNames.SEC_WEBSOCKET_PROTOCOL)) {
            for (String name : header.split(",")) {
                if (!name.isBlank()) {
                    names.add(name.trim());
                }
            }
        }
        return names;
    }

    /** The body of the 400 answering a handshake that offers {@code names} and not rsio.v0. */
    static String missingSubprotocol(List<String> names) {
        return "RS.io needs the WebSocket subprotocol " + WebSocketBridge.SUBPROTOCOL + " (PROTOCOL.md §1); the handshake offered "
                + (names.isEmpty() ? "none" : String.join(", ", names)) + "\n";
    }

    /** {@link #refuse(ChannelHandlerContext, HttpResponseStatus, String, boolean)} with the body: the answer to a GET. */
    static void refuse(ChannelHandlerContext ctx, HttpResponseStatus status, String text) {
        refuse(ctx, status, text, false);
    }

    /**
     * Answers with {@code status} and {@code text}, then closes: there is no WebSocket to send a close
     * frame on. A 426 says which protocol to upgrade to, as RFC 9110 §15.5.22 asks. {@code head}: the
     * request was a HEAD, answered with the same headers (Content-Length that of the text) and no
     * body, as RFC 9110 §9.3.2 asks (Netty's encoder does not know the method it answers).
     */
    static void refuse(ChannelHandlerContext ctx, HttpResponseStatus status, String text, boolean head) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        ByteBuf body = head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(bytes);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body);
        response.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length)
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        if (status.equals(HttpResponseStatus.UPGRADE_REQUIRED)) {
            response.headers().set(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET);
        }
        ctx.writeAndFlush(response).addListener(f -> ctx.close());
    }
}
