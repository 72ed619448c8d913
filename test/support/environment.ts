/**
 * Environment variables that choose a model provider, all empty: whatever the machine's environment says, a gateway
 * started with these (spread into its env) runs in demo mode unless a test names a provider.
 */
export const NO_PROVIDER = {
  COPILOT_PROVIDER: '',
  OPENAI_API_KEY: '',
  OPENAI_BASE_URL: '',
  ANTHROPIC_API_KEY: '',
  ANTHROPIC_BASE_URL: '',
  GOOGLE_API_KEY: '',
  GOOGLE_BASE_URL: '',
};
