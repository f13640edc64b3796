package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.PythonRstreams;
import java.util.ArrayList;
import java.util.List;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * {@link PythonRepr}: text quoted as the reference Python (3.11, Unicode 14.0) quotes it with repr(),
 * whatever the JDK's own Unicode data, so a URL refusal reads as rstreams' and as the JavaScript
 * binding's (PROTOCOL.md §1.1).
 */
public class PythonReprTest {
    /** The character {@code codePoint} as a string. */
    private static String of(int codePoint) {
        return new String(Character.toChars(codePoint));
    }

    @Test(timeOut = 10_000)
    public void charactersAreQuotedAsPython311QuotesThem() {
        assertEquals(PythonRepr.repr(of(0x1F6DD)), "'" + of(0x1F6DD) + "'"); // PLAYGROUND SLIDE (14.0): printed
        assertEquals(PythonRepr.repr("a" + of(0x0890)), "'a\\u0890'"); // ARABIC POUND MARK ABOVE (14.0), a format character
        assertEquals(PythonRepr.repr(of(0x1FAE8)), "'\\U0001fae8'"); // SHAKING FACE (15.0): Python 3.11 escapes it
        assertEquals(PythonRepr.repr(of(0x2EBF0)), "'\\U0002ebf0'"); // CJK extension I (15.1): escaped too
        assertEquals(PythonRepr.repr(of(0xE0000)), "'\\U000e0000'"); // unassigned
        assertEquals(PythonRepr.repr("x\u200b'"), "\"x\\u200b'\""); // a zero-width space; a ' and no "
        String url = "ws://h/slide" + of(0x1F6DD);
        IllegalArgumentException refused = expectThrows(IllegalArgumentException.class, () -> RsioUrl.parse(url));
        assertTrue(refused.getMessage().startsWith("'" + url + "' has a character its path or query may not hold "
                + "as written ('" + of(0x1F6DD) + "'): write it percent-encoded (%F0%9F%9B%9D)"), refused.getMessage());
    }

    /** Strings, as code points, whose repr() is compared whole: quotes, backslashes, astral and lone surrogates. */
    private static final int[][] MIXED = {
        {'a', '\'', 'b'}, {'"', '\''}, {'\'', '"', '\\'}, {'\\', '\n', '\r', '\t', 0x7f, 0x80, 0xa0, 0xad},
        {0xd800, 'x', 0xdfff}, {0x1F600, 0x10FFFF, 0xE0001}, {0x2028, 0x3000, 0x0378, 0xFEFF},
    };

    /**
     * The Python running the tests: its Unicode version, then per code point 1 (printable) or 0, then
     * per line of stdin (code points in hex) the code points of its repr(), in hex.
     */
    private static final String PYTHON = String.join("\n",
            "import sys, unicodedata",
            "print(unicodedata.unidata_version, ''.join('1' if chr(c).isprintable() else '0' for c in range(0x110000)))",
            "for line in sys.argv[1:]:",
            "    print(' '.join('%x' % ord(ch) for ch in repr(''.join(chr(int(c, 16)) for c in line.split()))))");

    @Test(timeOut = 30_000)
    public void everyCodePointIsQuotedAsTheReferencePythonQuotesIt() throws Exception {
        List<String> args = new ArrayList<>(List.of("-c", PYTHON));
        for (int[] text : MIXED) {
            List<String> hex = new ArrayList<>();
            for (int c : text) {
                hex.add(Integer.toHexString(c));
            }
            args.add(String.join(" ", hex));
        }
        PythonRstreams.Result run = PythonRstreams.run(25, args.toArray(String[]::new));
        assertEquals(run.status(), 0, run.output());
        String[] lines = run.output().split("\n");
        String[] parts = lines[0].split(" ", 2);
        if (!parts[0].equals(PythonRepr.UNICODE)) {
            throw new SkipException("the Python of the tests has Unicode " + parts[0] + ", the table (PythonRepr) "
                    + PythonRepr.UNICODE + ": write it anew with scripts/python_printable.py to compare");
        }
        String python = parts[1];
        assertEquals(python.length(), 0x110000);
        List<String> differ = new ArrayList<>();
        for (int c = 0; c < 0x110000; c++) {
            if (PythonRepr.printable(c) != (python.charAt(c) == '1')) {
                differ.add(String.format("U+%04X", c));
            }
        }
        assertEquals(differ, List.of(), "Unicode " + parts[0]);
        for (int i = 0; i < MIXED.length; i++) {
            StringBuilder expected = new StringBuilder();
            for (String c : lines[1 + i].split(" ")) {
                expected.appendCodePoint(Integer.parseInt(c, 16));
            }
            StringBuilder text = new StringBuilder();
            for (int c : MIXED[i]) {
                text.appendCodePoint(c);
            }
            assertEquals(PythonRepr.repr(text.toString()), expected.toString(), "case " + i);
        }
    }
}
