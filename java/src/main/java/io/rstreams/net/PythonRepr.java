package io.rstreams.net;

import java.util.Arrays;
import java.util.Locale;

/**
 * Text quoted as Python's {@code repr()} quotes a str, so that a refusal quoting what it refuses
 * (a URL, {@link RsioUrl}) reads the same in every binding (PROTOCOL.md §1.1): single quotes unless
 * it holds a ' and no ", backslashes escaped, and characters Python does not print (Unicode's Other
 * and Separator categories, but the space) as \\xNN, \\uNNNN or \\UNNNNNNNN (a zero-width space
 * pasted into a URL shows).
 *
 * <p>Which characters are printable depends on the Unicode version each runtime knows: Java 17's
 * {@link Character} knows Unicode 13.0, Python 3.11 14.0, 3.12 15.0, 3.13 15.1. {@link #ADDED} lists
 * the printable characters of Unicode 15.1 that Java 17 takes as unassigned (as Python 3.13's
 * {@code str.isprintable()} gives them), so this quotes as Python 3.13 does on any JDK from 17 on.
 * What remains different: a character added in Unicode 15.0 or 15.1 is printed here and by Python
 * 3.12/3.13 but escaped by Python 3.11 (15.1 only: by 3.12 too), and a character added after 15.1
 * (Unicode 16.0, Python 3.14) is escaped here on a JDK that does not know it and printed on one
 * that does ({@code PythonReprTest} compares every code point with the Python that runs the tests).
 */
final class PythonRepr {
    /**
     * Ranges, first and last code point, of the characters printable in Unicode 15.1 that Java 17's
     * {@link Character} data (Unicode 13.0) has as unassigned: the code points where Java 17's
     * categories and Python 3.13's {@code isprintable()} disagree, every one of them.
     */
    private static final int[] ADDED = {
            0x61D, 0x61D, 0x870, 0x88E, 0x898, 0x89F, 0x8B5, 0x8B5, 0x8C8, 0x8D2, 0xC3C, 0xC3C, 0xC5D, 0xC5D,
            0xCDD, 0xCDD, 0xCF3, 0xCF3, 0xECE, 0xECE, 0x170D, 0x170D, 0x1715, 0x1715, 0x171F, 0x171F, 0x180F, 0x180F,
            0x1AC1, 0x1ACE, 0x1B4C, 0x1B4C, 0x1B7D, 0x1B7E, 0x1DFA, 0x1DFA, 0x20C0, 0x20C0, 0x2C2F, 0x2C2F,
            0x2C5F, 0x2C5F, 0x2E53, 0x2E5D, 0x2FFC, 0x2FFF, 0x31EF, 0x31EF, 0x9FFD, 0x9FFF, 0xA7C0, 0xA7C1,
            0xA7D0, 0xA7D1, 0xA7D3, 0xA7D3, 0xA7D5, 0xA7D9, 0xA7F2, 0xA7F4, 0xFBC2, 0xFBC2, 0xFD40, 0xFD4F,
            0xFDCF, 0xFDCF, 0xFDFE, 0xFDFF, 0x10570, 0x1057A, 0x1057C, 0x1058A, 0x1058C, 0x10592, 0x10594, 0x10595,
            0x10597, 0x105A1, 0x105A3, 0x105B1, 0x105B3, 0x105B9, 0x105BB, 0x105BC, 0x10780, 0x10785, 0x10787, 0x107B0,
            0x107B2, 0x107BA, 0x10EFD, 0x10EFF, 0x10F70, 0x10F89, 0x11070, 0x11075, 0x110C2, 0x110C2, 0x1123F, 0x11241,
            0x116B9, 0x116B9, 0x11740, 0x11746, 0x11AB0, 0x11ABF, 0x11B00, 0x11B09, 0x11F00, 0x11F10, 0x11F12, 0x11F3A,
            0x11F3E, 0x11F59, 0x12F90, 0x12FF2, 0x1342F, 0x1342F, 0x13440, 0x13455, 0x16A70, 0x16ABE, 0x16AC0, 0x16AC9,
            0x1AFF0, 0x1AFF3, 0x1AFF5, 0x1AFFB, 0x1AFFD, 0x1AFFE, 0x1B11F, 0x1B122, 0x1B132, 0x1B132, 0x1B155, 0x1B155,
            0x1CF00, 0x1CF2D, 0x1CF30, 0x1CF46, 0x1CF50, 0x1CFC3, 0x1D1E9, 0x1D1EA, 0x1D2C0, 0x1D2D3, 0x1DF00, 0x1DF1E,
            0x1DF25, 0x1DF2A, 0x1E030, 0x1E06D, 0x1E08F, 0x1E08F, 0x1E290, 0x1E2AE, 0x1E4D0, 0x1E4F9, 0x1E7E0, 0x1E7E6,
            0x1E7E8, 0x1E7EB, 0x1E7ED, 0x1E7EE, 0x1E7F0, 0x1E7FE, 0x1F6DC, 0x1F6DF, 0x1F774, 0x1F776, 0x1F77B, 0x1F77F,
            0x1F7D9, 0x1F7D9, 0x1F7F0, 0x1F7F0, 0x1F979, 0x1F979, 0x1F9CC, 0x1F9CC, 0x1FA75, 0x1FA77, 0x1FA7B, 0x1FA7C,
            0x1FA87, 0x1FA88, 0x1FAA9, 0x1FAAF, 0x1FAB7, 0x1FABD, 0x1FABF, 0x1FABF, 0x1FAC3, 0x1FAC5, 0x1FACE, 0x1FACF,
            0x1FAD7, 0x1FADB, 0x1FAE0, 0x1FAE8, 0x1FAF0, 0x1FAF8, 0x2A6DE, 0x2A6DF, 0x2B735, 0x2B739, 0x2EBF0, 0x2EE5D,
            0x31350, 0x323AF
    };

    private PythonRepr() {}

    /** {@code text} as Python's {@code repr(text)} writes it. */
    static String repr(String text) {
        char quote = text.indexOf('\'') >= 0 && text.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder out = new StringBuilder().append(quote);
        for (int i = 0; i < text.length(); i += Character.charCount(text.codePointAt(i))) {
            int c = text.codePointAt(i);
            if (c == quote || c == '\\') {
                out.append('\\').appendCodePoint(c);
            } else if (c == '\n') {
                out.append("\\n");
            } else if (c == '\r') {
                out.append("\\r");
            } else if (c == '\t') {
                out.append("\\t");
            } else if (!printable(c)) {
                out.append(String.format(Locale.ROOT, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x", c));
            } else {
                out.appendCodePoint(c);
            }
        }
        return out.append(quote).toString();
    }

    /** Python 3.13's {@code str.isprintable()} of one character (Unicode 15.1). */
    static boolean printable(int c) {
        return switch (Character.getType(c)) {
            case Character.UNASSIGNED -> added(c);
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                    Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR -> false;
            case Character.SPACE_SEPARATOR -> c == ' ';
            default -> true;
        };
    }

    /** Whether {@code c} is in one of the {@link #ADDED} ranges. */
    private static boolean added(int c) {
        int at = Arrays.binarySearch(ADDED, c);
        return at >= 0 || (-at - 1) % 2 == 1; // a bound itself, or between a first and its last
    }
}
