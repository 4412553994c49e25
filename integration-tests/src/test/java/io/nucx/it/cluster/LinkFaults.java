package io.nucx.it.cluster;

import java.util.Locale;

/**
 * Shell scripts that degrade, black-hole and heal one interface, run inside a node's own network namespace (by docker
 * exec, or ip netns exec). Loss and delay come from tc netem; on a kernel without sch_netem (this build machine's:
 * "Specified qdisc kind is unknown") loss comes from iptables' statistic match both ways and delay from a tbf rate
 * limit (queueing delay), and the script says which it used. A black hole drops everything both ways with iptables,
 * which every kernel here has.
 */
final class LinkFaults {

    private LinkFaults() {
    }

    /** Prints "netem" or "iptables+tbf": what was applied. */
    static String degrade(String dev, double lossPercent, int delayMs) {
        String p = String.format(Locale.ROOT, "%.4f", lossPercent / 100);
        return "set -e; if tc qdisc replace dev " + dev + " root netem delay " + delayMs + "ms loss " + lossPercent
                + "% 2>/dev/null; then echo netem; else "
                + "iptables -A INPUT -i " + dev + " -m statistic --mode random --probability " + p + " -j DROP; "
                + "iptables -A OUTPUT -o " + dev + " -m statistic --mode random --probability " + p + " -j DROP; "
                + "tc qdisc replace dev " + dev + " root tbf rate 40mbit burst 64kb latency " + delayMs + "ms; "
                + "echo iptables+tbf; fi";
    }

    static String blackhole(String dev) {
        return "set -e; iptables -I INPUT -i " + dev + " -j DROP; iptables -I OUTPUT -o " + dev + " -j DROP";
    }

    static String heal(String dev) {
        return "tc qdisc del dev " + dev + " root 2>/dev/null; iptables -F INPUT; iptables -F OUTPUT; true";
    }
}
