package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * Seeded random inputs for the parser and the connection: valid frames or our protocol error,
 * nothing else, never a hang; and every way of chunking a valid stream gives the same frames.
 */
public class ParserFuzzTest {
    private static final long SEED = 0x5EEDL;

    private static Frame randomFrame(Random r) {
        long id = r.nextInt(4) == 0 ? r.nextLong() & Long.MAX_VALUE : r.nextInt(300);
        switch (r.nextInt(11)) {
            case 0: return new Frame.Subscribe("name/" + r.nextInt(1000) + "?x=é", id, r.nextLong() & Long.MAX_VALUE);
            case 1: return new Frame.Request(id, 1 + (r.nextLong() & (Long.MAX_VALUE - 1)));
            case 2: return new Frame.Cancel(id);
            case 3: return new Frame.OnSubscribe(id, 0);
            case 4: {
                byte[] e = new byte[r.nextInt(r.nextInt(10) == 0 ? 70_000 : 40)];
                r.nextBytes(e);
                return new Frame.OnNext(id, e);
            }
            case 5: return new Frame.OnComplete(id);
            case 6: return new Frame.OnError(id, "failed: " + r.nextInt());
            case 7: return new Frame.Goodbye("bye " + r.nextInt(10));
            case 8: {
                byte[] d = new byte[r.nextInt(100)];
                r.nextBytes(d);
                return new Frame.OnNextPart(r.nextBoolean(), id, r.nextInt(5), d);
            }
            case 9: return new Frame.Hello(r.nextBoolean(), 0, List.of(1L, (long) r.nextInt(5000)));
            default: {
                byte[] p = new byte[8];
                r.nextBytes(p);
                return new Frame.Extension(0x80 + r.nextInt(2), p);
            }
        }
    }

    @Test(timeOut = 60_000)
    public void anyChunkingGivesTheSameFrames() throws Exception {
        Random r = new Random(SEED);
        for (int round = 0; round < 200; round++) {
            List<Frame> frames = new ArrayList<>();
            FrameWriter w = new FrameWriter();
            for (int k = 0; k < 1 + r.nextInt(20); k++) {
                Frame f = randomFrame(r);
                frames.add(f);
                w.write(f, 0);
            }
            byte[] bytes = w.take();
            FrameParser p = new FrameParser(Limits.DEFAULT);
            List<Frame> got = new ArrayList<>();
            for (int at = 0; at < bytes.length; ) {
                int n = Math.min(bytes.length - at, 1 + r.nextInt(r.nextBoolean() ? 3 : 5000));
                p.feed(bytes, at, n);
                at += n;
                got.addAll(p.parseAll());
            }
            assertEquals(got, frames, "round " + round);
            assertEquals(p.buffered(), 0);
        }
    }

    /** Payloads received straight into their array (FrameParser.DIRECT_MIN .. DIRECT_MAX) and around the bounds. */
    @Test(timeOut = 60_000)
    public void largePayloadsParseTheSameFromEveryChunkingAndCountAsBuffered() throws Exception {
        Random r = new Random(SEED + 3);
        int[] sizes = {FrameParser.DIRECT_MIN - 1, FrameParser.DIRECT_MIN, 65_536, 70_000, FrameParser.DIRECT_MAX,
            FrameParser.DIRECT_MAX + 1};
        for (int size : sizes) {
            byte[] element = new byte[size];
            r.nextBytes(element);
            List<Frame> frames = List.of(new Frame.OnNext(1, element), new Frame.Request(2, 5),
                    new Frame.OnNextPart(true, 3, 4, element), new Frame.OnNext(1, new byte[] {7}));
            FrameWriter w = new FrameWriter();
            frames.forEach(f -> w.write(f, 0));
            byte[] bytes = w.take();
            for (int chunk : new int[] {1_000, 4_096, 65_536, 65_541, bytes.length}) {
                FrameParser p = new FrameParser(Limits.DEFAULT);
                List<Frame> got = new ArrayList<>();
                int consumed = 0; // the encoded size of the frames parsed so far
                for (int at = 0; at < bytes.length; at += chunk) {
                    int n = Math.min(chunk, bytes.length - at);
                    p.feed(java.nio.ByteBuffer.wrap(bytes, at, n));
                    for (Frame f : p.parseAll()) {
                        got.add(f);
                        consumed += FrameWriter.encode(f, 0).length;
                    }
                    assertEquals(p.buffered(), at + n - consumed, "size " + size + ", chunk " + chunk + ": held bytes");
                }
                assertEquals(got, frames, "size " + size + ", chunk " + chunk);
            }
            FrameParser cut = new FrameParser(Limits.DEFAULT);
            cut.feed(bytes, 0, size / 2);
            cut.parseAll();
            assertTrue(cut.eof() != null && cut.eof().getMessage().contains("§9.3"), "input ending inside a payload");
        }
    }

    @Test(timeOut = 60_000)
    public void randomBytesGiveFramesOrAProtocolErrorNothingElse() {
        Random r = new Random(SEED + 1);
        int errors = 0;
        for (int round = 0; round < 20_000; round++) {
            byte[] junk = new byte[1 + r.nextInt(64)];
            r.nextBytes(junk);
            if (r.nextBoolean()) {
                junk[0] = (byte) (1 + r.nextInt(13)); // mostly a core type byte, so fields get parsed
            }
            FrameParser p = new FrameParser(Limits.DEFAULT);
            p.feed(junk, 0, junk.length);
            try {
                p.parseAll(); // returns: all complete frames parsed, the rest buffered
            } catch (ProtocolException expected) {
                errors++;
                assertTrue(expected.getMessage().contains("PROTOCOL.md §"), expected.getMessage());
            }
        }
        assertTrue(errors > 1000, "the random inputs exercised the error paths: " + errors);
    }

    @Test(timeOut = 60_000)
    public void aConnectionFedRandomBytesEndsWithAGoodbyeOrKeepsGoing() {
        Random r = new Random(SEED + 2);
        for (int round = 0; round < 5_000; round++) {
            Connection c = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of(1L, 2L),
                    creds -> "t".equals(creds.token()));
            byte[] hello = {1, 0, 2, 1, 2};
            c.receiveData(hello, 0, hello.length);
            byte[] junk = new byte[1 + r.nextInt(48)];
            r.nextBytes(junk);
            junk[0] = (byte) (r.nextBoolean() ? 1 + r.nextInt(13) : 0x80 + r.nextInt(16));
            c.receiveData(junk, 0, junk.length);
            c.receiveEof();
            List<Event> events = c.events();
            assertTrue(events.get(events.size() - 1) instanceof Event.Closed, "round " + round + ": " + events);
            assertEquals(c.state(), Connection.State.CLOSED);
        }
    }
}
