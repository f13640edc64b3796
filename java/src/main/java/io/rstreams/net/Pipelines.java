package io.rstreams.net;

import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.IdentityCipherSuiteFilter;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.ssl.SslCloseCompletionEvent;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.net.URI;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;

/** The Netty pipeline for each transport: TLS (tls://, wss://) and WebSocket (ws://, wss://) in front of the endpoint. */
final class Pipelines {
    /**
     * Largest WebSocket frame accepted, as the largest message (PROTOCOL.md §1: above it, close
     * 1009 without a goodbye; {@link WebSocketBridge} counts a message's fragments against it).
     */
    static final int MAX_WS_MESSAGE = 1 << 20;

    private Pipelines() {}

    /** Holds channelActive back until the TLS handshake has succeeded (a failed one closes the channel). */
    private static final class TlsGate extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            // fired on handshake success below
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof SslHandshakeCompletionEvent done) {
                if (done.isSuccess()) {
                    ctx.fireChannelActive();
                } else {
                    ctx.close();
                }
            } else if (evt instanceof SslCloseCompletionEvent) {
                // the peer's close_notify: its input is over, as a TCP end of input would say (§9.3)
                ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            }
            ctx.fireUserEventTriggered(evt);
        }
    }

    static SslContext sslContext(SSLContext jdk, boolean client) {
        return new JdkSslContext(jdk, client, null, IdentityCipherSuiteFilter.INSTANCE, ApplicationProtocolConfig.DISABLED,
                ClientAuth.NONE, null, false);
    }

    /**
     * {@code origins}: the pages besides the server's own that may open a WebSocket
     * ({@link OriginCheck#check}; null: every page).
     */
    static void server(ChannelPipeline p, RsioUrl url, SslContext ssl, java.util.Set<String> origins,
            io.netty.channel.ChannelHandler... last) {
        if (url.secure()) {
            p.addLast(ssl.newHandler(p.channel().alloc()), new TlsGate());
        }
        if (url.websocket()) {
            // a decoder and an encoder apart, not an HttpServerCodec: Netty's handshake replaces the
            // decoder with its frame decoder, which then reads the bytes that came behind the request
            // (with a codec, those would pass the frame decoder unread)
            // the linger of a refusing close: behind TLS, ahead of the decoders it follows (WebSocketLinger)
            p.addLast(new WebSocketLinger(false));
            p.addLast(new HttpRequestDecoder(), new HttpResponseEncoder(), new HttpObjectAggregator(64 * 1024));
            p.addLast(new WebSocketBridge.Violations()); // behind the frame encoder Netty puts in
            // the path (404), the page's origin (403), the subprotocol (400): refused before Netty's handshake
            p.addLast(new HandshakeCheck(url.path(), origins == null ? null : new OriginCheck(url, origins)));
            p.addLast(new PongLimit());
            p.addLast(new WebSocketServerProtocolHandler(WebSocketServerProtocolConfig.newBuilder()
                    .websocketPath(url.path())
                    .checkStartsWith(true) // a query too: HandshakeCheck has refused every other path
                    .subprotocols(WebSocketBridge.SUBPROTOCOL)
                    .maxFramePayloadLength(MAX_WS_MESSAGE)
                    .allowExtensions(false)
                    .closeOnProtocolViolation(false) // WebSocketBridge.Violations sends the close
                    .handleCloseFrames(true)
                    // every text message reaches WebSocketBridge, which closes with 1003 (§1); Netty's
                    // check of its UTF-8 closed one that is not UTF-8 with 1000 "Bye", saying nothing
                    .withUTF8Validator(false)
                    .build()));
            p.addLast(new WebSocketBridge());
        }
        p.addLast(last);
    }

    /**
     * Puts a client's frame decoder in the place of the one Netty's handshake made, configured as
     * the server's is: its refusals go to {@link WebSocketBridge.Violations}, whose close the
     * bridge sends (with its reason, and lingers), where Netty's client decoder writes its own
     * close ahead of the frame encoder, so that it never reached the socket. Called when the
     * client's handshake completes, before that decoder has read a byte (Netty's HTTP codec passes
     * the bytes behind the 101 on once the response is handled).
     */
    static void clientDecoder(ChannelPipeline p) {
        if (p.get(WS_DECODER) != null) {
            p.replace(WS_DECODER, WS_DECODER, new WebSocket13FrameDecoder(WebSocketDecoderConfig.newBuilder()
                    .expectMaskedFrames(false)
                    .allowExtensions(false)
                    .maxFramePayloadLength(MAX_WS_MESSAGE)
                    .closeOnProtocolViolation(false)
                    .build()));
        }
    }

    /** The name Netty's client handshake gives its frame decoder. */
    private static final String WS_DECODER = "ws-decoder";

    /**
     * {@code opening}: the one bound on the TCP connect, TLS handshake and WebSocket opening
     * handshake together (the client's handshakeTimeout, as rstreams' connect bounds its opening
     * with handshake_timeout), put right ahead of {@code last}; null: none here (a resume attempt's
     * is its {@link ResumeHandshake}'s). The TLS and WebSocket handlers have no bounds of their own.
     */
    static void client(ChannelPipeline p, RsioUrl url, SslContext ssl, OpeningDeadline opening,
            io.netty.channel.ChannelHandler... last) {
        if (url.secure()) {
            SslHandler handler = ssl.newHandler(p.channel().alloc(), url.host(), url.port());
            handler.setHandshakeTimeoutMillis(0); // none: the opening's bound is OpeningDeadline's
            SSLEngine engine = handler.engine();
            SSLParameters params = engine.getSSLParameters();
            params.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the host
            engine.setSSLParameters(params);
            p.addLast(handler, new TlsGate());
        }
        if (url.websocket()) {
            // Violations right behind the codec: Netty's handshake puts its frame decoder and encoder
            // between them, so the close the bridge sends for the decoder's refusals is encoded
            p.addLast(new WebSocketLinger(false), new HttpClientCodec(), new WebSocketBridge.Violations(),
                    new HttpObjectAggregator(64 * 1024), new PongLimit());
            p.addLast(new WebSocketClientProtocolHandler(WebSocketClientProtocolConfig.newBuilder()
                    .webSocketUri(URI.create(url.toString()))
                    // from the parsed URL, not the URI (which gives a host with '_' none): RFC 7230 section 5.4
                    .customHeaders(new DefaultHttpHeaders().set(HttpHeaderNames.HOST, url.hostHeader()))
                    // no Origin, as rstreams' Python client: a program is no browser page, and an Origin made
                    // from the URL names a proxy's address, not the server's, which a server refuses (403)
                    .generateOriginHeader(false)
                    .subprotocol(WebSocketBridge.SUBPROTOCOL)
                    .version(WebSocketVersion.V13)
                    .maxFramePayloadLength(MAX_WS_MESSAGE)
                    .allowExtensions(false)
                    .handleCloseFrames(true)
                    .withUTF8Validator(false) // every text message reaches WebSocketBridge: 1003 (§1), as a server's
                    // none (it must be > 0: a year), instead of Netty's 10 s: the opening's bound is OpeningDeadline's
                    .handshakeTimeoutMillis(java.time.Duration.ofDays(365).toMillis())
                    .build()));
            p.addLast(new WebSocketBridge());
        }
        if (opening != null) {
            p.addLast(opening); // channelActive reaches it once the TLS and WebSocket handshakes are done
        }
        p.addLast(last);
    }
}
