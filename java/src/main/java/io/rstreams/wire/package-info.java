/**
 * The sans-I/O core of RS.io (PROTOCOL.md): bytes in, events out; calls in, bytes out.
 *
 * <p>Nothing here touches a socket, a thread or a clock. {@link io.rstreams.wire.FrameParser}
 * turns bytes into {@link io.rstreams.wire.Frame}s, {@link io.rstreams.wire.FrameWriter} turns
 * frames into bytes, and {@link io.rstreams.wire.Connection} keeps the state of one connection
 * (handshake, the subscriptions in both directions, their demand, split elements, goodbye)
 * so that every protocol rule can be tested without a network. The I/O layer
 * ({@code io.rstreams.net}) is a short loop around a {@code Connection}.
 */
package io.rstreams.wire;
