/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_plot.c: weft-bench's JSON report and its SVG plot of bus bandwidth
 * against size, one line per operation, readable in any browser.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tools/bench.h"

void bench_write_json(FILE *f, const bench_opts_t *o, int n, const bench_result_t *r,
                      size_t nr)
{
    fprintf(f, "{\n  \"ranks\": %d,\n  \"type\": \"%s\",\n  \"redop\": \"%s\",\n"
            "  \"algorithm\": \"%s\",\n  \"iterations\": %d,\n  \"results\": [", n,
            bench_dtype_name(o->dt), bench_redop_name(o->redop), o->algo ? o->algo : "default",
            o->iters);
    for (size_t i = 0; i < nr; i++) {
        fprintf(f, "%s\n    { \"op\": \"%s\", \"size\": %zu, \"count\": %zu", i ? "," : "",
                bench_kind_name(r[i].kind), r[i].bytes, r[i].count);
        for (int p = 0; p < 2; p++) {
            double algbw = r[i].t_us[p] > 0 ? (double)r[i].bytes / r[i].t_us[p] / 1e3 : 0;

            fprintf(f, ", \"%s\": { \"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": "
                    "%.4f, \"wrong\": %lld }", p ? "in_place" : "out_of_place", r[i].t_us[p],
                    algbw, algbw * bench_busbw_factor(r[i].kind, n), o->check ? r[i].wrong[p]
                                                                             : -1);
        }
        fputs(" }", f);
    }
    fputs("\n  ]\n}\n", f);
}

/* The plot: x = log2(size), y = busbw out of place. */
#define W 760
#define H 460
#define LEFT 70
#define RIGHT 170
#define TOP 40
#define BOTTOM 60

static const char *const colours[BENCH_NKINDS] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf"
};

static double busbw(const bench_result_t *r, int n)
{
    return r->t_us[0] > 0 ? (double)r->bytes / r->t_us[0] / 1e3 * bench_busbw_factor(r->kind, n)
                          : 0;
}

void bench_write_svg(FILE *f, const bench_opts_t *o, int n, const bench_result_t *r,
                     size_t nr)
{
    double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
    int pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM, legend = 0;

    for (size_t i = 0; i < nr; i++) {
        double x = log2((double)(r[i].bytes ? r[i].bytes : 1));

        xmin = x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
        ymax = busbw(&r[i], n) > ymax ? busbw(&r[i], n) : ymax;
    }
    if (!(xmax > xmin))
        xmax = xmin + 1;
    if (ymax <= 0)
        ymax = 1;
    ymax *= 1.1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\">weft-bench: bus bandwidth, %d ranks, "
            "%s%s%s</text>\n", LEFT, n, bench_dtype_name(o->dt), o->algo ? ", algorithm " : "",
            o->algo ? o->algo : "");
    /* Axes, with a grid line at each power of two of the size and at each
     * fifth of the bandwidth range. */
    fprintf(f, "<g stroke=\"#888\" stroke-width=\"1\">\n");
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", LEFT, TOP + ph, LEFT + pw,
            TOP + ph);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n</g>\n", LEFT, TOP, LEFT,
            TOP + ph);
    for (int e = (int)ceil(xmin); e <= (int)floor(xmax); e += xmax - xmin > 16 ? 2 : 1) {
        double x = LEFT + (e - xmin) / (xmax - xmin) * pw;
        const char *unit = e >= 30 ? "G" : e >= 20 ? "M" : e >= 10 ? "K" : "";

        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>\n", x,
                TOP, x, TOP + ph);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d%s</text>\n", x,
                TOP + ph + 16, 1 << (e % 10), unit);
    }
    for (int k = 0; k <= 5; k++) {
        double y = TOP + ph - k / 5.0 * ph;

        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", LEFT,
                y, LEFT + pw, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", LEFT - 6,
                y + 4, ymax * k / 5.0);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">size (bytes)</text>\n",
            LEFT + pw / 2, H - 18);
    fprintf(f, "<text transform=\"translate(18 %d) rotate(-90)\" text-anchor=\"middle\">busbw "
            "(GB/s, out of place)</text>\n", TOP + ph / 2);
    for (int k = 0; k < BENCH_NKINDS; k++) {
        int any = 0;

        for (size_t i = 0; i < nr; i++) {
            double x, y;

            if (r[i].kind != (bench_kind_t)k)
                continue;
            x = LEFT + (log2((double)(r[i].bytes ? r[i].bytes : 1)) - xmin) / (xmax - xmin) * pw;
            y = TOP + ph - busbw(&r[i], n) / ymax * ph;
            fprintf(f, "%s%.1f,%.1f", any ? " " : "<polyline fill=\"none\" stroke-width=\"2\" "
                    "points=\"", x, y);
            any = 1;
        }
        if (!any)
            continue;
        fprintf(f, "\" stroke=\"%s\"/>\n", colours[k]);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>\n",
                W - RIGHT + 16, TOP + 10 + legend * 20, colours[k]);
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", W - RIGHT + 36, TOP + 16 + legend * 20,
                bench_kind_name((bench_kind_t)k));
        legend++;
    }
    fputs("</svg>\n", f);
}
