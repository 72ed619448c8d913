// negotiator (Apollo Server's own dependency, which the HTTP transport uses to pick a content type as Apollo does) has
// no types of its own.
declare module 'negotiator' {
  export default class Negotiator {
    constructor(request: { headers: { accept?: string } });
    /** The media type the Accept header prefers among `available`; undefined when it takes none of them. */
    mediaType(available?: string[]): string | undefined;
  }
}
