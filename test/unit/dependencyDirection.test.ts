/**
 * Dependencies point down (shared/design/STYLE.md): nothing in lib/ imports activities/ or workflows/, not even a
 * type; activities/ and workflows/ import each other's types only, never a value. The source is parsed with the
 * TypeScript compiler, so `import type`, `import { type X }`, `export … from`, `import()` and `require()` are all seen.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');

interface ImportRef {
  specifier: string;
  typeOnly: boolean;
  line: number;
}

/** Every module reference of one source text, marked type-only when the compiled code keeps no trace of it. */
function importsOf(fileName: string, text: string): ImportRef[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const refs: ImportRef[] = [];
  const add = (spec: ts.Expression, typeOnly: boolean) => {
    if (!ts.isStringLiteralLike(spec)) return;
    refs.push({ specifier: spec.text, typeOnly, line: source.getLineAndCharacterOfPosition(spec.getStart()).line + 1 });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allNamedTypes = !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, !!clause && (clause.isTypeOnly || (!clause.name && allNamedTypes)));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      const named = node.exportClause;
      const allNamedTypes = !!named && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, node.isTypeOnly || allNamedTypes);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, true);
    } else if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return refs;
}

/** The top-level folder (lib, activities, workflows, …) a relative import of `fromFile` lands in; null for packages. */
function layerOf(fromFile: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const target = path.relative(ROOT, path.resolve(path.dirname(fromFile), specifier));
  return target.split(path.sep)[0] || null;
}

function tsFilesUnder(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(ROOT, dir, f))
    .sort();
}

/** `file:line imports 'specifier'` for each import from `dir` into one of `forbidden`, limited to values when `valuesOnly`. */
function violations(dir: string, forbidden: string[], valuesOnly: boolean): string[] {
  const found: string[] = [];
  for (const file of tsFilesUnder(dir)) {
    for (const ref of importsOf(file, fs.readFileSync(file, 'utf8'))) {
      const layer = layerOf(file, ref.specifier);
      if (!layer || !forbidden.includes(layer) || (valuesOnly && ref.typeOnly)) continue;
      found.push(`${path.relative(ROOT, file)}:${ref.line} imports '${ref.specifier}'${ref.typeOnly ? ' (type only)' : ''}`);
    }
  }
  return found;
}

describe('dependency direction', () => {
  test('the import scanner sees every form of import and tells types from values', () => {
    const file = path.join(ROOT, 'lib', 'x', 'y.ts');
    const refs = importsOf(
      file,
      [
        "import type { A } from '../../workflows/a';",
        "import { type B } from '../../workflows/b';",
        "import { type C, d } from '../../workflows/c';",
        "import e from '../../activities/e';",
        "import * as f from '../../activities/f';",
        "import '../../activities/g';",
        "export { h } from '../../workflows/h';",
        "export type { I } from '../../workflows/i';",
        "const j = require('../../activities/j');",
        "const k = () => import('../../workflows/k');",
        "let l: import('../../activities/l').L;",
        "import m = require('../../workflows/m');",
        "import { n } from '../n';",
        "import { o } from '@temporalio/workflow';",
      ].join('\n'),
    );
    expect(refs.map((r) => [r.specifier, r.typeOnly, layerOf(file, r.specifier)])).toEqual([
      ['../../workflows/a', true, 'workflows'],
      ['../../workflows/b', true, 'workflows'],
      ['../../workflows/c', false, 'workflows'],
      ['../../activities/e', false, 'activities'],
      ['../../activities/f', false, 'activities'],
      ['../../activities/g', false, 'activities'],
      ['../../workflows/h', false, 'workflows'],
      ['../../workflows/i', true, 'workflows'],
      ['../../activities/j', false, 'activities'],
      ['../../workflows/k', false, 'workflows'],
      ['../../activities/l', true, 'activities'],
      ['../../workflows/m', false, 'workflows'],
      ['../n', false, 'lib'],
      ['@temporalio/workflow', false, null],
    ]);
  });

  test('lib/ imports neither activities/ nor workflows/, not even a type', () => {
    expect(tsFilesUnder('lib').length).toBeGreaterThan(50);
    expect(violations('lib', ['activities', 'workflows'], false)).toEqual([]);
  });

  test('activities/ imports only types from workflows/', () => {
    expect(violations('activities', ['workflows'], true)).toEqual([]);
  });

  test('workflows/ imports only types from activities/', () => {
    expect(violations('workflows', ['activities'], true)).toEqual([]);
  });
});
