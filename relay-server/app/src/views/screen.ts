/** One screen of the app: its element, the title in the bar, and how it follows the state. */
export interface Screen {
  el: HTMLElement;
  title: string;
  /** Where the back button goes; none on the top screens. */
  back?: string;
  update(): void;
  dispose?(): void;
}
