package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.PythonRstreams;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.Test;

/**
 * {@link PythonRepr}: text quoted as Python's repr() quotes it, characters added to Unicode after
 * Java 17's data (13.0) included, so a URL refusal reads as rstreams' (PROTOCOL.md §1.1).
 */
public class PythonReprTest {
    /** The character {@code codePoint} as a string. */
    private static String of(int codePoint) {
        return new String(Character.toChars(codePoint));
    }

    @Test(timeOut = 10_000)
    public void charactersAddedInUnicode14And15AreQuotedAsPythonDoes() {
        assertEquals(PythonRepr.repr(of(0x1F6DD)), "'" + of(0x1F6DD) + "'"); // PLAYGROUND SLIDE (14.0): printed
        assertEquals(PythonRepr.repr("a" + of(0x0890)), "'a\\u0890'"); // ARABIC POUND MARK ABOVE (14.0), a format character
        assertEquals(PythonRepr.repr(of(0x1FAE8)), "'" + of(0x1FAE8) + "'"); // SHAKING FACE (15.0): printed
        assertEquals(PythonRepr.repr(of(0x2EBF0)), "'" + of(0x2EBF0) + "'"); // CJK extension I (15.1): printed
        assertEquals(PythonRepr.repr(of(0xE0000)), "'\\U000e0000'"); // unassigned
        assertEquals(PythonRepr.repr("x\u200b'"), "\"x\\u200b'\""); // a zero-width space; a ' and no "
        String url = "ws://h/slide" + of(0x1F6DD);
        IllegalArgumentException refused = expectThrows(IllegalArgumentException.class, () -> RsioUrl.parse(url));
        assertTrue(refused.getMessage().startsWith("'" + url + "' has a character its path or query may not hold "
                + "as written ('" + of(0x1F6DD) + "'): write it percent-encoded (%F0%9F%9B%9D)"), refused.getMessage());
    }

    /** Per code point, what the Python running the tests says: 1 printable, 0 not, 2 unassigned in its Unicode data. */
    private static final String PYTHON = String.join("\n",
            "import sys, unicodedata",
            "sys.stdout.write(unicodedata.unidata_version + ' ' + ''.join("
                    + "'2' if unicodedata.category(chr(c)) == 'Cn' else '1' if chr(c).isprintable() else '0' "
                    + "for c in range(0x110000)))");

    @Test(timeOut = 60_000)
    public void everyCodePointIsQuotedAsThePythonOfTheTestsQuotesItOrThatPythonDoesNotKnowIt() throws Exception {
        PythonRstreams.Result run = PythonRstreams.run(50, "-c", PYTHON);
        assertEquals(run.status(), 0, run.output());
        String[] parts = run.output().split(" ", 2);
        String python = parts[1];
        assertEquals(python.length(), 0x110000, parts[0]);
        List<String> differ = new ArrayList<>(); // where that Python knows the character and says otherwise
        for (int c = 0; c < 0x110000; c++) {
            char says = python.charAt(c);
            if (says != '2' && PythonRepr.printable(c) != (says == '1')) {
                differ.add(String.format("U+%04X", c));
            }
        }
        assertEquals(differ, List.of(), "Unicode " + parts[0]);
    }
}
