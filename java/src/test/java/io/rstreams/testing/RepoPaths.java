package io.rstreams.testing;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where the repository is: the java/ project's parent (or -Drstreams.repo.root). */
public final class RepoPaths {
    private RepoPaths() {}

    public static Path root() {
        String given = System.getProperty("rstreams.repo.root");
        Path root = (given == null || given.isEmpty() ? Path.of("..") : Path.of(given)).toAbsolutePath().normalize();
        if (!Files.isRegularFile(root.resolve("PROTOCOL.md"))) {
            throw new IllegalStateException("the repository root " + root + " has no PROTOCOL.md: run mvn from java/");
        }
        return root;
    }
}
