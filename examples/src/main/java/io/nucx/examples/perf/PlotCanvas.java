package io.nucx.examples.perf;

import javax.imageio.ImageIO;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;

/**
 * The plots' canvas: a white antialiased image with a bold title, left to the plotting code with black ink and the
 * plain 12-point label font, written out as PNG.
 */
public final class PlotCanvas {

    private final BufferedImage image;
    private final Graphics2D g;

    /** A {@code width} × {@code height} canvas with {@code title} at ({@code titleX}, 30). */
    public PlotCanvas(int width, int height, String title, int titleX) {
        image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, width, height);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
        g.drawString(title, titleX, 30);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    }

    public Graphics2D graphics() {
        return g;
    }

    /** Ends the drawing and writes the image to {@code out} as PNG. */
    public void writePng(File out) throws IOException {
        g.dispose();
        ImageIO.write(image, "png", out);
    }
}
