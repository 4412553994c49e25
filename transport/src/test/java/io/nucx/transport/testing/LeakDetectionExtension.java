package io.nucx.transport.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.List;

/**
 * Fails a test when Netty's leak detector (PARANOID) reports a leak during or right after it. Registered for every
 * test class by JUnit's extension auto-detection (META-INF/services).
 */
public final class LeakDetectionExtension implements AfterEachCallback, AfterAllCallback {

    static {
        LeakRecorder.install();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        check(context.getDisplayName());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        check(context.getDisplayName() + " (after all)");
    }

    private static void check(String where) {
        List<String> leaks = LeakRecorder.collect();
        if (!leaks.isEmpty()) {
            throw new AssertionError(leaks.size() + " buffer leak(s) reported in " + where + ":\n"
                    + String.join("\n", leaks));
        }
    }
}
