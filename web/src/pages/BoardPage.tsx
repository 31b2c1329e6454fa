import { useParams } from 'react-router';
import { Placeholder } from '../components';

export function BoardPage() {
  const { id } = useParams();
  return <Placeholder title="Board" text={`Tasks of project ${id}.`} />;
}
