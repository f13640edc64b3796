package io.rstreams.wire;

/**
 * What one endpoint accepts from its peer, and how it splits what it sends (PROTOCOL.md §11).
 * The defaults are those of the Python implementation, so both ends refuse the same input.
 *
 * @param maxElementSize largest element, whole or joined, and largest payload of one frame (16 MiB)
 * @param maxStringLength longest string or extension payload on the wire (64 KiB)
 * @param maxNameLength longest publisher name accepted in subscribe (1 KiB); longer ones are refused with onError
 * @param maxSubscriptions subscriptions the peer may hold open on us at once (1024); more are refused with onError
 * @param maxPartsInFlight split elements being joined at once on the connection (64)
 * @param maxReassemblyBytes bytes held in partly received elements on the connection (64 MiB)
 * @param maxExtensions most extension ids a hello may list (64)
 * @param splitThreshold elements we send that are larger are split into parts of this size (64 KiB, §8)
 */
public record Limits(
        int maxElementSize,
        int maxStringLength,
        int maxNameLength,
        int maxSubscriptions,
        int maxPartsInFlight,
        long maxReassemblyBytes,
        int maxExtensions,
        int splitThreshold) {

    /** The defaults of PROTOCOL.md §11. */
    public static final Limits DEFAULT =
            new Limits(16 << 20, 64 << 10, 1024, 1024, 64, 64L << 20, 64, 64 << 10);

    /** Checks that every limit is at least 1 and that they agree with each other. */
    public Limits {
        if (maxElementSize < 1 || maxStringLength < 1 || maxNameLength < 1 || maxSubscriptions < 1
                || maxPartsInFlight < 1 || maxExtensions < 1 || splitThreshold < 1) {
            throw new IllegalArgumentException("every limit must be >= 1: " + this);
        }
        if (maxReassemblyBytes < maxElementSize) {
            throw new IllegalArgumentException("maxReassemblyBytes must be >= maxElementSize");
        }
        if (maxNameLength > maxStringLength) {
            throw new IllegalArgumentException("maxNameLength must be <= maxStringLength");
        }
    }

    /** These limits with another split threshold. */
    public Limits withSplitThreshold(int bytes) {
        return new Limits(maxElementSize, maxStringLength, maxNameLength, maxSubscriptions, maxPartsInFlight,
                maxReassemblyBytes, maxExtensions, bytes);
    }

    /** These limits with another maximum element size (the reassembly bound grows with it if needed). */
    public Limits withMaxElementSize(int bytes) {
        return new Limits(bytes, maxStringLength, maxNameLength, maxSubscriptions, maxPartsInFlight,
                Math.max(maxReassemblyBytes, bytes), maxExtensions, splitThreshold);
    }
}
