// A counter component with a reducer and a custom hook.
import React, { useReducer } from "react";

export type Action = { type: "increment" } | { type: "reset"; to: number };

interface CounterProps {
  initial?: number;
  label: string;
}

function reducer(state: number, action: Action): number {
  switch (action.type) {
    case "increment":
      return state + 1;
    case "reset":
      return action.to;
  }
}

export function useCounter(initial = 0) {
  const [count, dispatch] = useReducer(reducer, initial);
  return { count, increment: () => dispatch({ type: "increment" }) };
}

export const Counter: React.FC<CounterProps> = ({ initial = 0, label }) => {
  const { count, increment } = useCounter(initial);
  return (
    <button onClick={increment} aria-label={label}>
      {label}: {count}
    </button>
  );
};

export default class Panel extends React.Component<{ title: string }> {
  render() {
    return <section><h2>{this.props.title}</h2><Counter label="clicks" /></section>;
  }
}
