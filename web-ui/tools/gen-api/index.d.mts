/** The committed OpenAPI document, written by the engine's `api_openapi` test. */
export declare const documentPath: string;
/** The generated types. */
export declare const schemaPath: string;
export declare const HEADER: string;
/** The contents of schema.gen.ts for the document at `path` (default `documentPath`). */
export declare function generate(path?: string): Promise<string>;
