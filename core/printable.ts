/** A line stays one line: control characters (a file name, a device's name may hold a newline) are shown as `?`. */
export const printable = (s: string): string => s.replace(/[\x00-\x1f\x7f]/g, '?');
