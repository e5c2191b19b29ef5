/**
 * The SVG charts of the benchmark reports: a horizontal bar chart (one bar a row) and a panel of
 * grouped vertical bars in millions. Plain strings, no dependencies, no side effects on import.
 */
import { mops } from './report.js';

export function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

/** The opening `<svg>` element and a background of `fill`; `fontSize` sets the default text size. */
export function svgHead(width: number, height: number, fill = '#fff', fontSize?: number): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif"${fontSize === undefined ? '' : ` font-size="${fontSize}"`}>`,
    `<rect width="${width}" height="${height}" fill="${fill}"/>`,
  ];
}

/** Horizontal bars, one a row, each labelled with its value and `unit`. */
export function svgBars(title: string, bars: { label: string; value: number }[], unit: string): string {
  const w = 720;
  const h = 60 + bars.length * 34;
  const max = Math.max(...bars.map((b) => b.value), 1);
  const rows = bars.map((b, i) => {
    const y = 40 + i * 34;
    const len = Math.max(1, (b.value / max) * 280); // leaves room for the value's label
    return `<text x="10" y="${y + 16}" font-size="12">${xmlEscape(b.label)}</text>`
      + `<rect x="300" y="${y + 4}" width="${len.toFixed(1)}" height="18" fill="#2f6db5"/>`
      + `<text x="${(306 + len).toFixed(1)}" y="${y + 17}" font-size="12">${b.value.toFixed(b.value < 10 ? 2 : 0)} ${unit}</text>`;
  }).join('\n');
  return `${svgHead(w, h).join('\n')}\n<text x="10" y="22" font-size="14" font-weight="bold">${title}</text>\n${rows}\n</svg>\n`;
}

export interface Bar {
  name: string;
  value: number;
  color: string;
}

export interface BarGroup {
  label: string;
  bars: Bar[];
  note: string;
}

/** One panel of grouped bars (values in millions) of `height` px starting at `y0`: title, grid, bars, legend. */
export function svgPanel(parts: string[], y0: number, width: number, height: number, title: string, groups: BarGroup[], barW: number, legend: Bar[]): void {
  const left = 60;
  const top = y0 + 50;
  const plotH = 220;
  const groupW = (width - left - 20) / groups.length;
  const gap = 8;
  const maxV = Math.max(...groups.flatMap((g) => g.bars.map((b) => b.value)));
  const step = maxV > 200e6 ? 50e6 : maxV > 80e6 ? 20e6 : maxV > 20e6 ? 10e6 : 5e6;
  const top2 = Math.ceil(maxV / step) * step;
  const y = (v: number): number => top + plotH - (v / top2) * plotH;
  parts.push(`<text x="${width / 2}" y="${y0 + 22}" text-anchor="middle" font-size="15" font-weight="bold">${title}</text>`);
  for (let v = 0; v <= top2; v += step) {
    const yy = y(v).toFixed(1);
    parts.push(`<line x1="${left}" y1="${yy}" x2="${width - 20}" y2="${yy}" stroke="#e3e6ea"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${(v / 1e6).toFixed(0)}</text>`);
  }
  groups.forEach((g, i) => {
    const cx = left + groupW * i + groupW / 2;
    const span = g.bars.length * barW + (g.bars.length - 1) * gap;
    g.bars.forEach((bar, j) => {
      const x = cx - span / 2 + j * (barW + gap);
      const yy = y(bar.value);
      parts.push(`<rect x="${x.toFixed(1)}" y="${yy.toFixed(1)}" width="${barW}" height="${(top + plotH - yy).toFixed(1)}" fill="${bar.color}"><title>${bar.name} ${g.label}: ${mops(bar.value)}</title></rect>`);
      parts.push(`<text x="${(x + barW / 2).toFixed(1)}" y="${(yy - 5).toFixed(1)}" text-anchor="middle">${(bar.value / 1e6).toFixed(1)}</text>`);
    });
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 18}" text-anchor="middle">${g.label}</text>`);
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 34}" text-anchor="middle" fill="#555">${g.note}</text>`);
  });
  parts.push(`<line x1="${left}" y1="${top + plotH}" x2="${width - 20}" y2="${top + plotH}" stroke="#333"/>`);
  const ly = y0 + height - 18;
  let lx = left;
  for (const item of legend) {
    parts.push(`<rect x="${lx}" y="${ly - 10}" width="12" height="12" fill="${item.color}"/><text x="${lx + 18}" y="${ly}">${item.name}</text>`);
    lx += 18 + Math.max(82, item.name.length * 7 + 12);
  }
}
