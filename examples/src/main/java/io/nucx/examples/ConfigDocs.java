package io.nucx.examples;

import io.nucx.transport.config.ConfigEntry;
import io.nucx.transport.config.ConfigSchema;
import io.nucx.transport.config.ConfigTable;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code nucx config-doc [FILE]}: writes docs/CONFIG.md from the settings every layer declares ({@link ConfigSchema}),
 * as UCX's {@code ucx_info -cf} prints its config tables. A test fails when the committed file differs.
 */
@Command(name = "config-doc", mixinStandardHelpOptions = true,
        description = "Write the NUCX_* settings reference (docs/CONFIG.md) from the layers' declarations.")
public final class ConfigDocs implements Callable<Integer> {

    /** How to regenerate the committed file, from the repository's root. */
    public static final String COMMAND = ". bin/jdk25.sh && mvn -B -q package -DskipTests -pl examples -am"
            + " && bin/nucx config-doc docs/CONFIG.md";

    @Parameters(arity = "0..1", paramLabel = "FILE", description = "Where to write (default: standard output).")
    private Path file;

    @Override
    public Integer call() throws IOException {
        String text = render(ConfigSchema.all());
        if (file == null) {
            PrintStream out = System.out;
            out.print(text);
        } else {
            Files.writeString(file, text, StandardCharsets.UTF_8);
        }
        return 0;
    }

    /** The reference as markdown: one table per layer, in the schema's order. */
    public static String render(ConfigSchema schema) {
        StringBuilder out = new StringBuilder();
        out.append("# nucx configuration\n\n");
        out.append("Generated from the settings each layer declares (`ConfigTable`, `ConfigEntry` in\n");
        out.append("`io.nucx.transport.config`); do not edit. After changing a declaration, regenerate it from the\n");
        out.append("repository's root with:\n\n");
        out.append("    ").append(COMMAND).append("\n\n");
        out.append("A setting is read from, in order: an override given to `NucxBootstrap` or `NucxConfig.of`, the\n");
        out.append("system property `nucx.<name>` (lower case, `_` as `.`), the environment variable `NUCX_<NAME>`,\n");
        out.append("the default. Every value is parsed when a context starts; a bad value, or an unknown `NUCX_*`\n");
        out.append("variable or `nucx.*` property, stops start-up naming it (and the closest known name).\n");
        for (ConfigTable t : schema.tables()) {
            out.append("\n## ").append(t.title()).append("\n\n");
            out.append("| Variable | Default | Values | Description |\n");
            out.append("|---|---|---|---|\n");
            for (ConfigEntry<?> e : t.entries()) {
                out.append("| `").append(e.envName()).append("` | ")
                        .append(e.defaultValue().isEmpty() ? "" : "`" + e.defaultValue() + "`").append(" | ")
                        .append(cell(e.values())).append(" | ").append(cell(e.doc())).append(" |\n");
            }
        }
        return out.toString();
    }

    private static String cell(String text) {
        return text.replace("|", "\\|");
    }
}
