/**
 * The few LangFlow calls the real-platform test needs, as LangFlow 1.13 answers them: log in as the superuser,
 * create an API key, and create a minimal runnable flow (Chat Input → Chat Output, an echo) built from the
 * component templates the running server itself serves (GET /api/v1/all), so the JSON matches its version.
 */

export class LangflowApi {
  constructor(
    readonly url: string,
    private token = '',
  ) {}

  private async call<T>(method: string, path: string, init: { json?: unknown; form?: Record<string, string>; apiKey?: string } = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (init.apiKey) headers['x-api-key'] = init.apiKey;
    let body: string | undefined;
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.json);
    } else if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(`${this.url}${path}`, { method, headers, body, signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`LangFlow ${method} ${path} answered HTTP ${res.status}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : null) as T;
  }

  async login(username: string, password: string): Promise<void> {
    const r = await this.call<{ access_token: string }>('POST', '/api/v1/login', { form: { username, password } });
    this.token = r.access_token;
  }

  async createApiKey(name: string): Promise<{ id: string; api_key: string }> {
    return this.call('POST', '/api/v1/api_key/', { json: { name } });
  }

  async deleteApiKey(id: string): Promise<void> {
    await this.call('DELETE', `/api/v1/api_key/${id}`);
  }

  /** Creates Chat Input → Chat Output: the run's answer carries the input text back. */
  async createEchoFlow(name: string, endpointName: string): Promise<{ id: string; name: string; endpoint_name: string }> {
    const all = await this.call<Record<string, Record<string, Template>>>('GET', '/api/v1/all');
    const template = (type: string): Template => {
      for (const category of Object.values(all)) if (category && typeof category === 'object' && type in category) return category[type] as Template;
      throw new Error(`LangFlow serves no ${type} component`);
    };
    const input = template('ChatInput');
    const output = template('ChatOutput');
    const inputId = 'ChatInput-armda';
    const outputId = 'ChatOutput-armda';
    const out = input.outputs.find((o) => o.name === 'message') ?? input.outputs[0];
    if (!out) throw new Error('ChatInput has no output');
    const field = output.template.input_value;
    if (!field) throw new Error('ChatOutput has no input_value');
    const sourceHandle = { dataType: 'ChatInput', id: inputId, name: out.name, output_types: out.types };
    const targetHandle = { fieldName: 'input_value', id: outputId, inputTypes: field.input_types ?? [], type: field.type };
    // LangFlow encodes a handle as its JSON with œ in place of every double quote
    const encode = (h: object) => JSON.stringify(h).replaceAll('"', 'œ');
    const data = {
      nodes: [
        { id: inputId, type: 'genericNode', position: { x: 0, y: 0 }, data: { id: inputId, type: 'ChatInput', node: input } },
        { id: outputId, type: 'genericNode', position: { x: 400, y: 0 }, data: { id: outputId, type: 'ChatOutput', node: output } },
      ],
      edges: [
        {
          id: `reactflow__edge-${inputId}${encode(sourceHandle)}-${outputId}${encode(targetHandle)}`,
          source: inputId,
          target: outputId,
          sourceHandle: encode(sourceHandle),
          targetHandle: encode(targetHandle),
          data: { sourceHandle, targetHandle },
        },
      ],
      viewport: { x: 0, y: 0, zoom: 1 },
    };
    return this.call('POST', '/api/v1/flows/', { json: { name, description: 'Armada real-platform test: echoes its input', endpoint_name: endpointName, data } });
  }
}

interface Template {
  outputs: { name: string; types: string[] }[];
  template: Record<string, { type: string; input_types?: string[] } | undefined>;
}
