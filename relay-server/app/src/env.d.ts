/** The build (relay-server/app/build.mjs) loads `.css` imported from TypeScript as text. */
declare module '*.css' {
  const text: string;
  export default text;
}
