// LangChain's OpenAI chat model, which the LangChain adapter's tests drive against the fake OpenAI. Installed in
// this folder and imported through this file (see apollo.ts for why); @langchain/core, its peer, is the root's,
// the same copy the gateway's LangChain adapter uses.
export { ChatOpenAI } from '@langchain/openai';
