package io.rstreams.net;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.time.Duration;

/**
 * Numbers in texts as rstreams writes them with Python's {@code format(x, "g")}: six significant
 * digits, rounded half to even from the exact value, trailing zeros dropped, an exponent of at
 * least two digits below 1e-04 and from 1e+06 on ({@code 0.0001}, {@code 1e-05}, {@code 1e+06}).
 * A timeout in a goodbye is written so, byte for byte as the other bindings write it (§10).
 */
final class PythonG {
    private static final MathContext SIX = new MathContext(6, RoundingMode.HALF_EVEN);

    private PythonG() {}

    /** {@code x} as Python's {@code format(x, "g")} writes it. */
    static String of(double x) {
        if (Double.isNaN(x)) {
            return "nan";
        }
        if (Double.isInfinite(x)) {
            return x > 0 ? "inf" : "-inf";
        }
        String sign = x < 0 || (x == 0 && 1 / x < 0) ? "-" : "";
        if (x == 0) {
            return sign + "0";
        }
        BigDecimal rounded = new BigDecimal(Math.abs(x)).round(SIX);
        int exponent = rounded.precision() - rounded.scale() - 1; // of the leading digit
        if (exponent < -4 || exponent >= 6) {
            String digits = rounded.unscaledValue().toString().replaceAll("0+$", "");
            String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            return String.format("%s%se%s%02d", sign, mantissa, exponent < 0 ? "-" : "+", Math.abs(exponent));
        }
        return sign + rounded.stripTrailingZeros().toPlainString();
    }

    /** A duration in seconds, as rstreams writes a timeout of that many seconds. */
    static String seconds(Duration d) {
        return of(d.getSeconds() + d.getNano() / 1e9);
    }
}
