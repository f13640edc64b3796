/**
 * RS.io over the network with Netty: {@link io.rstreams.net.RsioClient} connects to a URL and
 * gives remote publishers as {@link java.util.concurrent.Flow.Publisher}s;
 * {@link io.rstreams.net.RsioServer} serves a map of names or name patterns to publisher
 * factories. Either end may publish and subscribe on the same connection.
 *
 * <p>Demand never turns into unbounded memory: the serving side asks its local publisher for at
 * most a window of elements at a time, and only while the channel is writable, whatever
 * demand the peer granted (PROTOCOL.md §6.3). For {@code org.reactivestreams} users,
 * {@code org.reactivestreams.FlowAdapters} converts in both directions
 * ({@link io.rstreams.net.RemotePublisher#toReactiveStreams()}).
 */
package io.rstreams.net;
